import { Hono } from "hono";
import { z } from "zod";
import { createApiTokens } from "../../auth/tokens";
import type { ApiDeps, ApiEnv } from "../env";
import { tokenList, tokenRow } from "../queries";
import { jsonBody } from "../validate";

const tokenBody = z.strictObject({
  // Emptiness, length and uniqueness are lib/auth/tokens' to refuse, in its words.
  name: z.string({ error: "name is required: what uses the token" }),
  read_only: z.boolean({ error: "read_only is true or false" }).optional(),
});

/**
 * API tokens for scripts and the CLI. Reached with a session only: the guard refuses a token here
 * (lib/auth tokenAccess), so a leaked token cannot mint or revoke others.
 */
export function tokenRoutes({ app }: ApiDeps) {
  const tokens = createApiTokens(app);
  return new Hono<ApiEnv>()
    .get("/api/tokens", async (c) => c.json({ tokens: await tokenList(app) }, 200))
    .post("/api/tokens", jsonBody("token", tokenBody), async (c) => {
      const made = await tokens.create(c.req.valid("json"));
      // The only time the value is shown: it is not stored.
      return c.json({ ...tokenRow(made.row), token: made.token }, 201);
    })
    .delete("/api/tokens/:id", async (c) => ((await tokens.revoke(c.req.param("id"))) ? c.json({ revoked: true }, 200) : c.json({ error: "no such token" }, 404)));
}
