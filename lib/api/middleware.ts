import type { ErrorHandler, MiddlewareHandler } from "hono";
import { matchedRoutes } from "hono/route";
import type { Auth } from "../auth";
import { sessionRouteRefusal } from "../auth/origin";
import { TooLargeError, UserError } from "../core/errors";
import type { Logger } from "../core/log";
import { publicRoute, sessionOnlyReason, type ApiEnv } from "./env";

/**
 * The one gate in front of every route, mounted unconditionally by createApi:
 * - a path no route has goes on to 404 (and a known path with another method to 405) without a
 *   look at the session, as before;
 * - every route refuses a non-JSON state-changing request (415), a foreign Host (403) and a
 *   cross-site request (403), see sessionRouteRefusal; setup, login and logout included, since a
 *   forged login or setup would sign the victim in as the attacker;
 * - every route not marked `publicRoute` answers 401 without a session, and finds the user in
 *   `c.get("user")` with one; `Authorization: Bearer <API token>` stands for the session (lib/auth
 *   tokenAccess: read-only tokens only read, failures rate limited), except on a route marked
 *   `sessionOnly` (tokens, the password): 403, decided on the matched route, whatever the spelling
 *   of the path.
 */
export function sessionGuard(auth: Auth): MiddlewareHandler<ApiEnv> {
  return async (c, next) => {
    const matched = matchedRoutes(c);
    if (!matched.some((r) => r.method !== "ALL")) return next();
    const refused = sessionRouteRefusal(c.req.raw, auth.origin);
    if (refused) return refused;
    if (matched.some((r) => r.handler === publicRoute)) {
      c.set("user", null);
      return next();
    }
    // A bearer token decides alone (never a cookie beside it); without one, the session.
    const viaToken = await auth.tokenAccess(c.req.raw);
    if (viaToken instanceof Response) return viaToken;
    if (viaToken) {
      const reason = matched.map((r) => sessionOnlyReason(r.handler)).find((r) => r !== undefined);
      if (reason !== undefined) return c.json({ error: reason }, 403);
    }
    const user = viaToken ?? (await auth.sessionOf(c.req.raw));
    if (!user) return c.json({ error: "sign in required" }, 401);
    c.set("user", user);
    return next();
  };
}

/** Every API answer is private to its user: nothing may be cached on the way (the stream sets its own). */
export const noStore: MiddlewareHandler = async (c, next) => {
  await next();
  if (!c.res.headers.has("cache-control")) c.res.headers.set("cache-control", "no-store");
};

/** Thrown errors in the API's error shape: 413 and 400 say what was wrong, anything else is logged and is a 500. */
export function apiErrors(log: Logger): ErrorHandler<ApiEnv> {
  return (err, c) => {
    // The rest of an oversized body is never read: the connection closes after the answer.
    if (err instanceof TooLargeError) return c.json({ error: err.message, problems: err.details ?? [] }, 413, { connection: "close" });
    if (err instanceof UserError) return c.json({ error: err.message, problems: err.details ?? [] }, 400);
    log.error("api error", { path: c.req.path, error: err });
    return c.json({ error: "internal error" }, 500);
  };
}
