import type { IncomingMessage, ServerResponse } from "node:http";
import type { Auth } from "../auth";
import { safeNext } from "../auth/safe-next";

export type PageGate = (req: IncomingMessage, res: ServerResponse) => boolean;

/**
 * Sends page requests that may not see the page elsewhere, before Next renders anything:
 * - no user yet: every page goes to /setup (the first visit creates the admin);
 * - a user exists: /setup no longer exists and goes to /login;
 * - no valid session: to /login?next=<path>; a signed-in visit to /login goes on to `next`.
 * Returns true when it answered. Next's assets, /api/* (the API checks its own session) and files
 * with an extension (favicon, robots.txt, public/) pass through.
 */
export function createPageGate(auth: Pick<Auth, "hasUser" | "sessionFromCookieHeader">): PageGate {
  return (req, res) => {
    const url = new URL(req.url ?? "/", "http://localhost");
    const path = url.pathname;
    if (!isPage(path)) return false;
    if (!auth.hasUser()) return path === "/setup" ? false : redirect(res, "/setup");
    if (path === "/setup") return redirect(res, "/login");
    const signedIn = auth.sessionFromCookieHeader(req.headers.cookie) !== null;
    if (path === "/login") return signedIn ? redirect(res, safeNext(url.searchParams.get("next"))) : false;
    if (signedIn) return false;
    return redirect(res, `/login?next=${encodeURIComponent(path + url.search)}`);
  };
}

function isPage(path: string): boolean {
  if (path.startsWith("/_next/") || path.startsWith("/__nextjs") || path === "/api" || path.startsWith("/api/")) return false;
  const last = path.slice(path.lastIndexOf("/") + 1);
  return !last.includes(".");
}

function redirect(res: ServerResponse, location: string): true {
  res.writeHead(302, { location, "cache-control": "no-store" });
  res.end();
  return true;
}
