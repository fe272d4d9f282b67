import { json } from "../api/http";

const STATE_CHANGING = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/**
 * CSRF defence for state-changing requests, on top of SameSite=Lax: a browser tells us where a
 * request comes from (Sec-Fetch-Site, Origin) and a page on another site cannot forge either.
 * Requests without both headers (curl, scripts) carry no ambient browser credentials to abuse and
 * still need the session cookie. Returns the 403 to answer with, or null to go on.
 */
export function crossOriginRefusal(req: Request, publicUrl: string): Response | null {
  if (!STATE_CHANGING.has(req.method.toUpperCase())) return null;
  const site = req.headers.get("sec-fetch-site");
  if (site !== null && site !== "same-origin" && site !== "none") return refused(`Sec-Fetch-Site: ${site}`);
  const origin = req.headers.get("origin");
  if (origin === null) return null;
  if (!allowedOrigins(req, publicUrl).has(origin.toLowerCase())) return refused(`Origin: ${origin}`);
  return null;
}

/** PUBLIC_URL's origin, and the origin the request itself was addressed to (LAN IP, another name). */
function allowedOrigins(req: Request, publicUrl: string): Set<string> {
  const allowed = new Set<string>();
  const add = (u: string) => {
    try {
      allowed.add(new URL(u).origin.toLowerCase());
    } catch {
      // A malformed Host adds nothing; PUBLIC_URL was validated as a URL at start.
    }
  };
  add(publicUrl);
  const own = new URL(req.url);
  add(own.origin);
  const host = req.headers.get("host");
  if (host) {
    // The scheme is not in the Host header; a proxy in front may terminate TLS, so both are the
    // request's own origin.
    add(`http://${host}`);
    add(`https://${host}`);
  }
  return allowed;
}

const refused = (why: string): Response => json({ error: `cross-origin request refused (${why})` }, 403);
