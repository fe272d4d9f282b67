/** The package ships no types: it parses the Prometheus text format into metric families. */
declare module "parse-prometheus-text-format" {
  export interface ParsedSample {
    value?: string;
    labels?: Record<string, string>;
    /** Histograms and summaries. */
    count?: string;
    sum?: string;
    buckets?: Record<string, string>;
    quantiles?: Record<string, string>;
  }
  export interface ParsedFamily {
    name: string;
    help: string;
    type: "COUNTER" | "GAUGE" | "HISTOGRAM" | "SUMMARY" | "UNTYPED";
    metrics: ParsedSample[];
  }
  export default function parsePrometheusTextFormat(text: string): ParsedFamily[];
}
