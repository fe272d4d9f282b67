/**
 * The one way the app talks to URLs a user typed: SSRF-checked at connect time on every hop,
 * bounded in time and size. Implemented in `lib/net/safe-fetch.ts`.
 */
export interface SafeRequest {
  method?: string;
  headers?: Record<string, string>;
  body?: string | Uint8Array;
  /** Whole request deadline (connect + headers + body). Default 20 s. */
  timeoutMs?: number;
  /** Bytes of body kept; past that the socket is closed and `truncated` is set. Default 64 KB. */
  maxBytes?: number;
  /** Redirects followed (each hop re-checked). Default 3. */
  maxRedirects?: number;
  /** Overrides ALLOW_PRIVATE_URLS for this call (tests). */
  allowPrivate?: boolean;
  /** Ends the request early (a worker shutting down); it then fails with a retryable ActionError. */
  signal?: AbortSignal;
}

export interface SafeResponse {
  status: number;
  headers: Record<string, string>;
  /** The body bytes kept (at most maxBytes). */
  body: Buffer;
  /** Body decoded as UTF-8. */
  text(): string;
  truncated: boolean;
  /** The final URL after redirects. */
  url: string;
}

export type SafeFetch = (url: string, init?: SafeRequest) => Promise<SafeResponse>;
