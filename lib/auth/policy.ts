import { z } from "zod";

/**
 * Credential rules, in a module without Node imports so pages can show them. Longer passwords than
 * the maximum only cost CPU in argon2: no one types 1,024 characters.
 */
export const PASSWORD_MIN_LENGTH = 10;
export const PASSWORD_MAX_LENGTH = 1024;
export const EMAIL_MAX_LENGTH = 254;

/**
 * The setup and login bodies, and ADMIN_EMAIL/ADMIN_PASSWORD: every problem at once, each with its
 * field, in words the form shows under that field. Setup also enforces the password policy; login
 * only its presence. The email comes out trimmed and in lower case.
 */
export function credentialsSchema(setup: boolean) {
  const email = z
    .string({ error: "email is required" })
    .trim()
    .min(1, { error: "email is required", abort: true })
    .max(EMAIL_MAX_LENGTH, { error: "enter an email address like you@example.com", abort: true })
    .regex(/^[^\s@]+@[^\s@]+$/, "enter an email address like you@example.com")
    .toLowerCase();
  const base = z.string({ error: "password is required" }).min(1, { error: "password is required", abort: true }).max(PASSWORD_MAX_LENGTH, { error: `password must be at most ${PASSWORD_MAX_LENGTH} characters`, abort: true });
  const password = setup ? base.min(PASSWORD_MIN_LENGTH, `password must be at least ${PASSWORD_MIN_LENGTH} characters`) : base;
  return z.object({ email, password });
}

/** Settings' password change: the current password (checked by lib/auth) and a new one under the setup policy. */
export function passwordChangeSchema() {
  return z.object({
    current_password: z.string({ error: "current password is required" }).min(1, { error: "current password is required", abort: true }).max(PASSWORD_MAX_LENGTH, { error: "current password is wrong" }),
    new_password: z
      .string({ error: "new password is required" })
      .min(1, { error: "new password is required", abort: true })
      .max(PASSWORD_MAX_LENGTH, { error: `new password must be at most ${PASSWORD_MAX_LENGTH} characters`, abort: true })
      .min(PASSWORD_MIN_LENGTH, `new password must be at least ${PASSWORD_MIN_LENGTH} characters`),
  });
}
