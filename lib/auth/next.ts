import { cookies } from "next/headers";
import type { Auth, SessionUser } from ".";
import { SESSION_COOKIE } from "./session";

/**
 * Server components and server actions run in Next's module graph, not server.ts's; they reach the
 * one auth instance (and its database) through the global server.ts sets, like `__whenthen`.
 */
export function authFromGlobal(): Auth {
  const auth = (globalThis as { __whenthenAuth?: Auth }).__whenthenAuth;
  if (!auth) throw new Error("whenthen: auth is not initialised; start the app with `pnpm dev` (server.ts)");
  return auth;
}

/** The signed-in user of the current request, or null. The page gate has already sent visitors without one to /login. */
export async function getSessionFromCookies(): Promise<SessionUser | null> {
  const value = (await cookies()).get(SESSION_COOKIE)?.value;
  if (!value) return null;
  return await authFromGlobal().sessionFromCookieHeader(`${SESSION_COOKIE}=${value}`);
}
