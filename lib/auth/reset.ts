import type { App } from "../app";
import { UserError } from "../core/errors";
import { hashPassword } from "./password";
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from "./policy";

export interface PasswordReset {
  email: string;
  /** The session version every cookie must now carry: all older cookies are refused. */
  sessionVersion: number;
}

/**
 * `pnpm reset-password`, for an operator on the server (someone with the database file, so no old
 * password is asked): sets a new password for the admin and ends every session by bumping the
 * session version. `email` picks the user when more than one exists; with one it may be omitted.
 */
export async function resetPassword(app: Pick<App, "store" | "clock">, input: { email?: string; password: string }): Promise<PasswordReset> {
  const { password } = input;
  if (password.length < PASSWORD_MIN_LENGTH) throw new UserError(`reset-password: the new password must be at least ${PASSWORD_MIN_LENGTH} characters (got ${password.length})`);
  if (password.length > PASSWORD_MAX_LENGTH) throw new UserError(`reset-password: the new password must be at most ${PASSWORD_MAX_LENGTH} characters`);
  const users = app.store.users;
  let user;
  if (input.email) {
    user = await users.byEmail(input.email.trim().toLowerCase());
    if (!user) throw new UserError(`reset-password: no user with the email "${input.email}"`);
  } else {
    const n = await users.count();
    if (n === 0) throw new UserError("reset-password: there is no admin yet; open the app's /setup page to create one");
    if (n > 1) throw new UserError("reset-password: more than one user exists; name one with --email you@example.com");
    user = await users.first();
    if (!user) throw new UserError("reset-password: there is no admin yet; open the app's /setup page to create one");
  }
  const version = await users.setPassword(user.id, await hashPassword(password), app.clock.now().toISOString());
  if (version === null) throw new Error(`reset-password: the user ${user.email} disappeared while the password was being set`);
  return { email: user.email, sessionVersion: version };
}
