import type { IncomingMessage, ServerResponse } from "node:http";
import type { Auth } from "../auth";
import { safeNext } from "../auth/safe-next";

export type PageGate = (req: IncomingMessage, res: ServerResponse) => Promise<boolean>;

/**
 * Sends page requests that may not see the page elsewhere, before Next renders anything:
 * - a Host that is not this app's (PUBLIC_URL; lib/auth/origin): 403 with a page that says which
 *   variable to set (someone opening http://192.168.1.20:3000 with PUBLIC_URL unset);
 * - no user yet: every page goes to /setup (the first visit creates the admin);
 * - a user exists: /setup no longer exists and goes to /login;
 * - no valid session: to /login?next=<path>; a signed-in visit to /login goes on to `next`.
 * Resolves true when it answered. Next's assets, /api/* (the API checks its own session) and files
 * with an extension (favicon, robots.txt, public/) pass through.
 */
export function createPageGate(auth: Pick<Auth, "hasUser" | "sessionFromCookieHeader" | "origin">): PageGate {
  return async (req, res) => {
    const url = new URL(req.url ?? "/", "http://localhost");
    const path = url.pathname;
    if (!isPage(path)) return false;
    const hostProblem = auth.origin.hostProblem(req.headers.host);
    if (hostProblem) return wrongHost(res, hostProblem);
    if (!(await auth.hasUser())) return path === "/setup" ? false : redirect(res, "/setup");
    if (path === "/setup") return redirect(res, "/login");
    const signedIn = (await auth.sessionFromCookieHeader(req.headers.cookie)) !== null;
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

function wrongHost(res: ServerResponse, problem: string): true {
  const text = problem.charAt(0).toUpperCase() + problem.slice(1) + ".";
  const html = `<!doctype html><meta charset="utf-8"><title>whenthen: wrong address</title><body style="font-family:system-ui,sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem"><h1>Wrong address for this server</h1><p>${escapeHtml(text)}</p><p>Webhook URLs, attachment links and the sign-in cookie are all made for PUBLIC_URL, so the app only answers there (this also stops a DNS rebinding page from talking to it).</p></body>`;
  res.writeHead(403, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" });
  res.end(html);
  return true;
}

const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function redirect(res: ServerResponse, location: string): true {
  res.writeHead(302, { location, "cache-control": "no-store" });
  res.end();
  return true;
}
