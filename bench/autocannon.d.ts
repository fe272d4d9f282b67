// autocannon ships no types; the part the benchmarks use.
declare module "autocannon" {
  interface Request {
    method?: "GET" | "POST" | "PUT" | "DELETE";
    path?: string;
    headers?: Record<string, string>;
    body?: string;
    /** Called before each request is sent; returns the request to send. */
    setupRequest?: (req: Request) => Request;
  }
  interface Options {
    url: string;
    connections?: number;
    duration?: number;
    amount?: number;
    overallRate?: number;
    requests?: Request[];
    /** Replace `[<id>]` in headers and bodies with a fresh id per request. */
    idReplacement?: boolean;
  }
  interface Histogram {
    average: number;
    total: number;
    p50: number;
    p99: number;
    max: number;
  }
  interface Result {
    requests: Histogram;
    latency: Histogram;
    non2xx: number;
    errors: number;
  }
  /** The running instance is also a promise of its result; `stop()` ends it early. */
  export default function autocannon(opts: Options): Promise<Result> & { stop(): void };
}
