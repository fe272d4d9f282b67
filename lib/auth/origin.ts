import { isIP } from "node:net";
import { jsonResponse as json } from "../core/json";

const STATE_CHANGING = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/**
 * Which Host and Origin the signed-in UI and its API answer to: PUBLIC_URL's, and the request's
 * own Host only once it passed as one of these. Trusting any Host let a page on evil.example that
 * re-resolved its name to this server (DNS rebinding) create the admin before setup: its Host and
 * Origin matched each other. Loopback names are added when PUBLIC_URL is itself loopback (a laptop:
 * localhost and 127.0.0.1 are the same place, and no outside name can resolve to them in a way a
 * browser treats as that origin), and `pnpm dev` also answers the hosts listed in
 * NEXT_ALLOWED_DEV_ORIGINS, since that is how its README opens it from another machine.
 */
export interface OriginPolicy {
  /** null when a request addressed to `host` (the Host header) may be served; else what to set, in words. */
  hostProblem(host: string | null | undefined): string | null;
  /**
   * Whether a browser's Origin header names this app, as a string compared exactly (scheme, host
   * and port): PUBLIC_URL's origin, or the origin the request was addressed to (`host`, the Host
   * that hostProblem let through, on PUBLIC_URL's scheme). A page on another port of this machine
   * (`http://127.0.0.1:1`) is another origin even when PUBLIC_URL is loopback, and an Origin that
   * only parses to ours (`http://127.0.0.1.:3000`) is not ours: no browser sends it.
   */
  originAllowed(origin: string, host: string): boolean;
}

export function createOriginPolicy(publicUrl: string, devHosts: readonly string[] = []): OriginPolicy {
  const pub = new URL(publicUrl);
  const loopback = isLoopbackName(pub.hostname);
  const extra = new Set(devHosts.map((h) => h.trim().toLowerCase()).filter(Boolean));
  const nameAllowed = (hostname: string): boolean => (loopback && isLoopbackName(hostname)) || extra.has(hostname);

  return {
    hostProblem(host) {
      const given = (host ?? "").trim().toLowerCase();
      if (given === pub.host) return null;
      let hostname: string;
      try {
        hostname = new URL(`http://${given}`).hostname;
      } catch {
        hostname = "";
      }
      if (hostname && nameAllowed(hostname)) return null;
      return (
        `this server answers as ${pub.origin} (PUBLIC_URL) and was reached as ${JSON.stringify(given || "(no Host header)")}; ` +
        `set PUBLIC_URL to the address you open it at (e.g. PUBLIC_URL=http://${given || "your.host"}) and restart` +
        (extra.size || !given ? "" : `, or with pnpm dev add the host to NEXT_ALLOWED_DEV_ORIGINS`)
      );
    },
    originAllowed(origin, host) {
      // "null" and anything else that is not an origin never equals one of these.
      const given = origin.toLowerCase();
      return given === pub.origin || given === `${pub.protocol}//${host.trim().toLowerCase()}`;
    },
  };
}

/** localhost, *.localhost, 127.0.0.0/8 and ::1: names that only ever mean this machine. */
export function isLoopbackName(hostname: string): boolean {
  const h = hostname.toLowerCase().replace(/^\[|\]$/g, "").replace(/\.$/, "");
  if (h === "localhost" || h.endsWith(".localhost")) return true;
  if (isIP(h) === 4) return h.startsWith("127.");
  return h === "::1" || h === "0:0:0:0:0:0:0:1";
}

/**
 * Checks for a session route (setup, login and logout included), before it runs; the first
 * refusal wins, or null to go on:
 * 1. a state-changing request whose body is not declared JSON: 415. A form on another site can
 *    post urlencoded, multipart or text/plain without a CORS preflight; none of them is JSON.
 * 2. a Host that is not this app's (see OriginPolicy): 403, with what to set.
 * 3. CSRF, on top of SameSite=Lax: a browser tells us where a request comes from (Sec-Fetch-Site,
 *    Origin) and a page on another site cannot forge either. Requests without both headers (curl,
 *    scripts) carry no ambient browser credentials to abuse and still need the session cookie.
 */
export function sessionRouteRefusal(req: Request, policy: OriginPolicy): Response | null {
  const changing = STATE_CHANGING.has(req.method.toUpperCase());
  if (changing && !declaresJson(req)) {
    return json({ error: `a ${req.method} here takes a JSON body (content-type: application/json), not ${req.headers.get("content-type") ?? "an undeclared type"}` }, 415);
  }
  const host = req.headers.get("host") ?? new URL(req.url).host;
  const hostProblem = policy.hostProblem(host);
  if (hostProblem) return json({ error: `request refused: ${hostProblem}` }, 403);
  if (!changing) return null;
  const site = req.headers.get("sec-fetch-site");
  if (site !== null && site !== "same-origin" && site !== "none") return refused(`Sec-Fetch-Site: ${site}`);
  const origin = req.headers.get("origin");
  if (origin !== null && !policy.originAllowed(origin, host)) return refused(`Origin: ${origin}`);
  return null;
}

/** JSON (application/json, anything+json), or no body at all (a POST that only names its target). */
function declaresJson(req: Request): boolean {
  const type = req.headers.get("content-type");
  if (type === null) {
    const length = req.headers.get("content-length");
    return req.headers.get("transfer-encoding") === null && (length === null || Number(length) === 0);
  }
  const mime = type.split(";")[0]!.trim().toLowerCase();
  return mime === "application/json" || (mime.startsWith("application/") && mime.endsWith("+json"));
}

const refused = (why: string): Response => json({ error: `cross-origin request refused (${why})` }, 403);
