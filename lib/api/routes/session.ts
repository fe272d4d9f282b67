import { Hono } from "hono";
import { createMiddleware } from "hono/factory";
import { clientIpOf } from "../../auth/client-ip";
import { credentialsSchema, passwordChangeSchema } from "../../auth/policy";
import { UserError } from "../../core/errors";
import { publicRoute, sessionOnly, type ApiDeps, type ApiEnv } from "../env";
import { jsonBody } from "../validate";

/** First-run setup, sign-in, sign-out and who is signed in. The rules live in lib/auth. */
export function sessionRoutes({ auth }: ApiDeps) {
  // The setup page stops existing once the admin does, whatever the body says.
  const setupOpen = createMiddleware<ApiEnv>(async (c, next) => ((await auth.hasUser()) ? c.json({ error: "not found" }, 404) : next()));
  return new Hono<ApiEnv>()
    .post("/api/setup", publicRoute, setupOpen, jsonBody("setup", credentialsSchema(true)), async (c) => {
      const created = await auth.setup(c.req.valid("json"));
      // Another setup won the race.
      if (!created) return c.json({ error: "not found" }, 404);
      return c.json({ email: created.email }, 201, { "set-cookie": created.setCookie });
    })
    .post("/api/login", publicRoute, jsonBody("login", credentialsSchema(false)), async (c) => {
      const result = await auth.login(c.req.valid("json"), clientIpOf(c.req.raw));
      if (result.ok) return c.json({ email: result.email }, 200, { "set-cookie": result.setCookie });
      if (result.retryAfterSeconds > 0) {
        const seconds = result.retryAfterSeconds;
        return c.json({ error: `too many failed sign-ins; try again in ${Math.ceil(seconds / 60)} minute(s)` }, 429, { "retry-after": String(seconds) });
      }
      return c.json({ error: "wrong email or password" }, 401);
    })
    .post("/api/logout", publicRoute, async (c) => c.json({ signed_out: true }, 200, { "set-cookie": await auth.logout(c.req.header("cookie")) }))
    .get("/api/session", (c) => c.json({ email: c.get("user")!.email }))
    // Settings: the current password is required; every other session ends, this one gets a new cookie.
    .post("/api/account/password", sessionOnly("the password is changed in Settings while signed in, not with a token"), jsonBody("password change", passwordChangeSchema()), async (c) => {
      const body = c.req.valid("json");
      const result = await auth.changePassword(c.get("user")!.userId, { currentPassword: body.current_password, newPassword: body.new_password }, clientIpOf(c.req.raw));
      if (result.ok) return c.json({ changed: true, other_sessions_signed_out: true }, 200, { "set-cookie": result.setCookie });
      if (result.retryAfterSeconds > 0) return c.json({ error: result.message, problems: [{ path: result.field, message: result.message }] }, 429, { "retry-after": String(result.retryAfterSeconds) });
      throw new UserError(`password change: ${result.message}`, [{ path: result.field, message: result.message }]);
    });
}
