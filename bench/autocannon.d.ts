// autocannon ships no types; the part the benchmarks use.
declare module "autocannon" {
  interface Request {
    method?: "GET" | "POST" | "PUT" | "DELETE";
    path?: string;
    headers?: Record<string, string>;
    body?: string;
  }
  interface Options {
    url: string;
    connections?: number;
    duration?: number;
    amount?: number;
    requests?: Request[];
  }
  interface Histogram {
    average: number;
    total: number;
    p50: number;
    p99: number;
  }
  interface Result {
    requests: Histogram;
    latency: Histogram;
    non2xx: number;
    errors: number;
  }
  export default function autocannon(opts: Options): Promise<Result>;
}
