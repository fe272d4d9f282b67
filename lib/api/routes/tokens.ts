import { Hono } from "hono";
import { z } from "zod";
import { createApiTokens } from "../../auth/tokens";
import { sessionOnly, type ApiDeps, type ApiEnv } from "../env";
import { tokenList, tokenRow } from "../queries";
import { jsonBody } from "../validate";

const tokenBody = z.strictObject({
  // Emptiness, length and uniqueness are lib/auth/tokens' to refuse, in its words.
  name: z.string({ error: "name is required: what uses the token" }),
  read_only: z.boolean({ error: "read_only is true or false" }).optional(),
  // The date itself is lib/auth/tokens' to check (a date and time with its zone, in the future).
  expires_at: z.string({ error: "expires_at is a date and time such as 2027-01-31T00:00:00Z, or null" }).nullable().optional(),
});

/**
 * API tokens for scripts and the CLI. Reached with a session only: every route here is marked
 * `sessionOnly`, so a leaked token cannot list, mint or revoke tokens (and outlive its own revocation).
 */
export function tokenRoutes({ app }: ApiDeps) {
  const tokens = createApiTokens(app);
  const withSession = sessionOnly("API tokens are managed in Settings while signed in, not with a token");
  return new Hono<ApiEnv>()
    .get("/api/tokens", withSession, async (c) => c.json({ tokens: await tokenList(app) }, 200))
    .post("/api/tokens", withSession, jsonBody("token", tokenBody), async (c) => {
      const made = await tokens.create(c.req.valid("json"));
      // The only time the value is shown: it is not stored.
      return c.json({ ...tokenRow(made.row, app.clock.now()), token: made.token }, 201);
    })
    .delete("/api/tokens/:id", withSession, async (c) => ((await tokens.revoke(c.req.param("id"))) ? c.json({ revoked: true }, 200) : c.json({ error: "no such token" }, 404)));
}
