import type { Context, MiddlewareHandler } from "hono";
import type { App } from "../app";
import type { AppletService } from "../applets/service";
import type { Auth, SessionUser } from "../auth";
import type { Sandbox } from "../sandbox";

/** What the routes read from the request context: the signed-in user, set by the session guard. */
export type ApiEnv = { Variables: { user: SessionUser | null } };

/** How views with credentials answer this request: masked when an API token asks (lib/api/queries CredentialView). */
export const credentialViewOf = (c: Context<ApiEnv>): { masked: boolean } => ({ masked: c.get("user")?.token !== undefined });

export interface ApiDeps {
  app: App;
  applets: AppletService;
  sandbox?: Sandbox;
  /**
   * Who is asking. Always required: the session guard is mounted on every route. Production passes
   * lib/auth's `createAuth`; tests that are not about sign-in pass a test identity
   * (tests/helpers/auth.ts), never nothing.
   */
  auth: Auth;
  /** How often an open /api/stream pings and re-checks its session (default 15 s). */
  streamPingMs?: number;
}

/**
 * Marks a route reachable without a session (setup, login, logout). The guard looks for this
 * exact function among the matched handlers, so a route is public only by saying so where it is
 * declared, and the route-table test lists which ones do.
 */
export const publicRoute: MiddlewareHandler = async (_c, next) => {
  await next();
};

/** What each session-only marker answers a token with, keyed by the marker itself. */
const sessionOnlyReasons = new WeakMap<object, string>();

/**
 * Marks a route reachable with a signed-in session only, never with an API token (managing
 * tokens, changing the password), with the refusal a token gets, in words. The guard decides on
 * the route Hono matched, never on the path as sent: a path can be spelt many ways (`%74okens`,
 * `t%6Fkens`) that all route here.
 */
export function sessionOnly(reason: string): MiddlewareHandler {
  const marker: MiddlewareHandler = async (_c, next) => {
    await next();
  };
  sessionOnlyReasons.set(marker, reason);
  return marker;
}

/** The refusal of a token on a route marked `sessionOnly`, or undefined for any other handler. */
export const sessionOnlyReason = (handler: unknown): string | undefined => (typeof handler === "function" ? sessionOnlyReasons.get(handler) : undefined);
