import { promises as dnsPromises, type LookupAddress } from "node:dns";
import http from "node:http";
import https from "node:https";
import { isIP, type LookupFunction } from "node:net";
import { ActionError } from "../core/errors";
import { bareHost, isPublicAddress, rangeOf } from "./addresses";
import type { SafeFetch, SafeRequest, SafeResponse } from "./types";

// The guard's classification, for callers that import the net guard as one module.
export { checkUrlForSave, isPublicAddress } from "./addresses";

/**
 * SSRF guard (DESIGN.md "SSRF"): every address a socket will connect to is classified with
 * ipaddr.js, after DNS, on every redirect hop, and the socket is pinned to the address that was
 * checked, so a second DNS answer (rebinding) never reaches `connect`. String checks on the URL
 * are not the guard; they only give early errors when an applet is saved.
 */

/** Resolves a host name to every address it has (dns.lookup with `all: true`). */
export type LookupFn = (hostname: string) => Promise<LookupAddress[]>;

export interface SafeFetchOptions {
  /** `config.allowPrivateUrls` (ALLOW_PRIVATE_URLS=true): no address is refused. */
  allowPrivate: boolean;
  lookup?: LookupFn;
  /**
   * Tests only: which addresses count as public. There is no public network in the test
   * environment, so a test names one loopback address "public" to stand in for the internet.
   */
  classify?: (ip: string) => boolean;
}

const DEFAULT_TIMEOUT_MS = 20_000;
const DEFAULT_MAX_BYTES = 64 * 1024;
const DEFAULT_MAX_REDIRECTS = 3;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);
// Sent only to the origin they were written for (as browsers and curl do): a redirect to another
// host must not carry an applet's API token along.
const ORIGIN_BOUND_HEADERS = ["authorization", "cookie", "proxy-authorization"];
const BODY_HEADERS = ["content-type", "content-length", "transfer-encoding", "content-encoding"];
const USER_AGENT = "whenthen/0.1 (+self-hosted automation runner)";

const defaultLookup: LookupFn = (hostname) => dnsPromises.lookup(hostname, { all: true, verbatim: true });

class FetchedResponse implements SafeResponse {
  constructor(
    readonly status: number,
    readonly headers: Record<string, string>,
    readonly body: Buffer,
    readonly truncated: boolean,
    readonly url: string,
  ) {}
  text(): string {
    return this.body.toString("utf8");
  }
}

interface Agents {
  http: http.Agent;
  https: https.Agent;
}

// Like Node's global agent, but idle sockets close after 4 s, before the 5 s keep-alive timeout of
// common servers, to avoid sending a request on a socket the server is closing.
const agentOptions = { keepAlive: true, scheduling: "lifo" as const, timeout: 4000 };
const newAgents = (): Agents => ({ http: new http.Agent(agentOptions), https: new https.Agent(agentOptions) });

export function createSafeFetch(opts: SafeFetchOptions): SafeFetch {
  const lookup = opts.lookup ?? defaultLookup;
  const classify = opts.classify ?? isPublicAddress;
  // Unchecked connections never share a pool with checked ones: a keep-alive socket opened to a
  // private address under allowPrivate must not serve a later checked request for the same host.
  let checkedAgents: Agents | undefined;
  let uncheckedAgents: Agents | undefined;

  async function resolveTarget(u: URL, display: string, allowPrivate: boolean, signal: AbortSignal): Promise<LookupAddress[] | null> {
    const host = bareHost(u);
    const family = isIP(host);
    if (family) {
      if (!allowPrivate && !classify(host)) throw refused(host, display);
      return null; // a literal: the socket connects to exactly this address, no lookup happens
    }
    let addresses: LookupAddress[];
    try {
      addresses = await abortable(lookup(host), signal);
    } catch (err) {
      if (signal.aborted) throw err;
      const code = (err as NodeJS.ErrnoException | undefined)?.code;
      throw new ActionError(`net: cannot resolve ${host}${code ? ` (${code})` : ""} for ${display}`, { retryable: true, cause: err });
    }
    if (addresses.length === 0) {
      throw new ActionError(`net: ${host} has no addresses, for ${display}`, { retryable: true });
    }
    if (!allowPrivate) {
      // Any private answer refuses the whole name: which answer the socket would take is not ours to pick.
      for (const a of addresses) {
        if (!classify(a.address)) throw refused(a.address, display);
      }
    }
    return addresses;
  }

  return async function safeFetch(url: string, init: SafeRequest = {}): Promise<SafeResponse> {
    const allowPrivate = init.allowPrivate ?? opts.allowPrivate;
    const timeoutMs = init.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const maxBytes = init.maxBytes ?? DEFAULT_MAX_BYTES;
    const maxRedirects = init.maxRedirects ?? DEFAULT_MAX_REDIRECTS;

    let u = parseHttpUrl(url, url);
    let display = safeDisplay(url, u);
    let method = (init.method ?? "GET").toUpperCase();
    const headers = normalizeHeaders(init.headers);
    let body: Buffer | Uint8Array | undefined =
      init.body === undefined ? undefined : typeof init.body === "string" ? Buffer.from(init.body) : init.body;
    if (body !== undefined && headers["content-length"] === undefined && headers["transfer-encoding"] === undefined) {
      headers["content-length"] = String(body.byteLength);
    }

    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, timeoutMs);
    const abortFromCaller = () => controller.abort();
    init.signal?.addEventListener("abort", abortFromCaller, { once: true });
    if (init.signal?.aborted) controller.abort();
    try {
      for (let redirects = 0; ; redirects++) {
        const pinned = await resolveTarget(u, display, allowPrivate, controller.signal);
        const agents = allowPrivate ? (uncheckedAgents ??= newAgents()) : (checkedAgents ??= newAgents());
        const agent = u.protocol === "https:" ? agents.https : agents.http;
        const res = await send(u, { method, headers, body, agent, pinned, signal: controller.signal });
        const status = res.statusCode ?? 0;
        const location = res.headers.location;
        if (!REDIRECTS.has(status) || location === undefined) {
          const { bytes, truncated } = await readBody(res, maxBytes);
          return new FetchedResponse(status, collectHeaders(res.rawHeaders), bytes, truncated, u.href);
        }
        // The redirect body is never read: destroying the socket is cheaper than draining an
        // arbitrarily long body, and the next hop may go elsewhere anyway.
        res.destroy();
        if (redirects >= maxRedirects) {
          throw new ActionError(`net: too many redirects (more than ${maxRedirects}) for ${display}`, { retryable: false });
        }
        const next = parseHttpUrl(location, u.href, display);
        if (next.origin !== u.origin) for (const h of ORIGIN_BOUND_HEADERS) delete headers[h];
        if ((status === 303 && method !== "HEAD") || ((status === 301 || status === 302) && method === "POST")) {
          method = "GET";
          body = undefined;
          for (const h of BODY_HEADERS) delete headers[h];
        }
        u = next;
        display = safeDisplay(u.href, u);
      }
    } catch (err) {
      if (controller.signal.aborted && !timedOut) throw new ActionError(`net: request to ${display} was cancelled`, { retryable: true, cause: err });
      throw toActionError(err, display, timedOut, timeoutMs);
    } finally {
      clearTimeout(timer);
      init.signal?.removeEventListener("abort", abortFromCaller);
    }
  };
}

interface SendOptions {
  method: string;
  headers: Record<string, string>;
  body: Buffer | Uint8Array | undefined;
  agent: http.Agent;
  /** Checked addresses for a host name; null for an IP literal. */
  pinned: LookupAddress[] | null;
  signal: AbortSignal;
}

function send(u: URL, o: SendOptions, retriedStale = false): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    const transport = u.protocol === "https:" ? https : http;
    const req = transport.request({
      protocol: u.protocol,
      hostname: bareHost(u),
      port: u.port || undefined,
      path: u.pathname + u.search,
      method: o.method,
      headers: o.headers,
      auth: u.username || u.password ? `${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}` : undefined,
      agent: o.agent,
      signal: o.signal,
      // The hostname stays the request's host, so Host and TLS SNI/certificate checks use the name,
      // while the socket connects only to the addresses checked above.
      lookup: o.pinned ? pinnedLookup(o.pinned) : undefined,
    });
    req.once("response", resolve);
    req.once("error", (err: NodeJS.ErrnoException) => {
      // A kept-alive socket the server closed while idle: the request never reached it, so one
      // immediate retry on a fresh socket is safe even for POST (Node's documented pattern).
      if (!retriedStale && req.reusedSocket && err.code === "ECONNRESET" && !o.signal.aborted) {
        send(u, o, true).then(resolve, reject);
      } else {
        reject(err);
      }
    });
    req.end(o.body);
  });
}

function pinnedLookup(addresses: LookupAddress[]): LookupFunction {
  return (_hostname, options, callback) => {
    process.nextTick(() => {
      if (options.all) callback(null, addresses);
      else {
        const first = addresses.find((a) => !options.family || a.family === options.family) ?? addresses[0];
        if (first) callback(null, first.address, first.family);
      }
    });
  };
}

function readBody(res: http.IncomingMessage, maxBytes: number): Promise<{ bytes: Buffer; truncated: boolean }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const finish = (truncated: boolean) => {
      settled = true;
      resolve({ bytes: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size), truncated });
    };
    res.on("data", (chunk: Buffer) => {
      if (settled) return;
      const room = maxBytes - size;
      if (chunk.length > room) {
        if (room > 0) {
          chunks.push(chunk.subarray(0, room));
          size = maxBytes;
        }
        finish(true);
        // Stop the download: the rest could be gigabytes.
        res.destroy();
        return;
      }
      chunks.push(chunk);
      size += chunk.length;
    });
    res.once("end", () => {
      if (!settled) finish(false);
    });
    res.once("error", (err) => {
      if (!settled) {
        settled = true;
        reject(err);
      }
    });
    res.once("close", () => {
      if (!settled) {
        settled = true;
        reject(Object.assign(new Error("connection closed before the response body ended"), { code: "ECONNRESET" }));
      }
    });
  });
}

function collectHeaders(raw: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    const value = raw[i + 1]!;
    out[name] = out[name] === undefined ? value : `${out[name]}, ${value}`;
  }
  return out;
}

function normalizeHeaders(input: Record<string, string> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (input) for (const [k, v] of Object.entries(input)) out[k.toLowerCase()] = v;
  out["user-agent"] ??= USER_AGENT;
  return out;
}

function parseHttpUrl(raw: string, base: string, display?: string): URL {
  let u: URL;
  try {
    u = display === undefined ? new URL(raw) : new URL(raw, base);
  } catch {
    const what = display === undefined ? `invalid URL ${JSON.stringify(raw)}` : `invalid redirect location ${JSON.stringify(raw)} from ${display}`;
    throw new ActionError(`net: ${what}`, { retryable: false });
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") {
    const where = display === undefined ? "" : ` (redirect from ${display})`;
    throw new ActionError(`net: refusing ${u.protocol.replace(/:$/, "")} URL${where}: only http and https are fetched`, { retryable: false });
  }
  return u;
}

/** The URL for messages: as the user wrote it, unless it carries credentials. */
function safeDisplay(raw: string, u: URL): string {
  if (!u.username && !u.password) return raw;
  const copy = new URL(u.href);
  copy.username = "";
  copy.password = "";
  return copy.href;
}

function refused(ip: string, display: string): ActionError {
  return new ActionError(`net: refusing to connect to ${ip} (${rangeOf(ip)}) for ${display}`, { retryable: false });
}

// Errors caused by the request itself (a header with a newline after templating, a bad method):
// repeating the same request cannot succeed.
const REQUEST_ERRORS = new Set([
  "ERR_INVALID_CHAR",
  "ERR_INVALID_HTTP_TOKEN",
  "ERR_HTTP_INVALID_HEADER_VALUE",
  "ERR_UNESCAPED_CHARACTERS",
  "ERR_INVALID_ARG_TYPE",
  "ERR_INVALID_ARG_VALUE",
  "ERR_INVALID_URL",
]);

function toActionError(err: unknown, display: string, timedOut: boolean, timeoutMs: number): ActionError {
  if (err instanceof ActionError) return err;
  if (timedOut) return new ActionError(`net: timed out after ${timeoutMs} ms for ${display}`, { retryable: true, cause: err });
  const e = err as NodeJS.ErrnoException | undefined;
  const detail = e?.code ? `${e.code}${e.message && !e.message.includes(e.code) ? `: ${e.message}` : ""}` : (e?.message ?? String(err));
  if (e?.code && REQUEST_ERRORS.has(e.code)) {
    return new ActionError(`net: invalid request for ${display}: ${e.message}`, { retryable: false, cause: err });
  }
  return new ActionError(`net: ${detail} for ${display}`, { retryable: true, cause: err });
}

function abortable<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(abortReason(signal));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortReason(signal));
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener("abort", onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener("abort", onAbort);
        // The request's own rejection, passed on unchanged (the caller classifies it).
        // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors
        reject(e);
      },
    );
  });
}

/** Why the signal aborted: the DOMException `abort()` makes, or an Error made of a custom reason. */
const abortReason = (signal: AbortSignal): Error =>
  signal.reason instanceof Error ? signal.reason : new Error(`aborted: ${String(signal.reason)}`);
