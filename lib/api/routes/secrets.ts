import { Hono } from "hono";
import { z } from "zod";
import type { ApiDeps, ApiEnv } from "../env";
import { secretList } from "../queries";
import { jsonBody } from "../validate";

const secretBody = z.strictObject({
  // The name's pattern and an empty value are lib/secrets' to refuse, in its words.
  name: z.string({ error: "name is required: A–Z, 0–9 and _" }),
  value: z.string({ error: "value is required: the secret's text" }),
});

/** Secrets: names and dates out, values in; a value is never sent back. */
export function secretRoutes({ app }: ApiDeps) {
  return new Hono<ApiEnv>()
    .get("/api/secrets", async (c) => c.json({ secrets: await secretList(app) }, 200))
    .post("/api/secrets", jsonBody("secret", secretBody), async (c) => {
      const { name, value } = c.req.valid("json");
      await app.secrets.set(name, value);
      return c.json({ name }, 201);
    })
    .delete("/api/secrets/:name", async (c) => ((await app.secrets.delete(c.req.param("name"))) ? c.json({ deleted: true }, 200) : c.json({ error: "no such secret" }, 404)));
}
