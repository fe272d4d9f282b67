import { Hono } from "hono";
import { LIMITS } from "../../core/limits";
import type { ApiDeps, ApiEnv } from "../env";
import { readJson } from "../http";

/** Export files and their import. An export file is checked item by item by lib/applets/service.ts, every problem with its path. */
export function transferRoutes({ app, applets }: ApiDeps) {
  return new Hono<ApiEnv>()
    .get("/api/export", (c) => {
      const id = c.req.query("applet_id");
      const body = id ? [applets.exportOne(id)].filter((a) => a !== null) : applets.exportAll();
      const name = id ? `whenthen-applet-${id}.json` : `whenthen-applets-${app.clock.now().toISOString().slice(0, 10)}.json`;
      return c.json(body, 200, { "content-disposition": `attachment; filename="${name}"` });
    })
    .post("/api/import", async (c) => c.json(applets.import(await readJson(c.req.raw, LIMITS.importBodyBytes), c.req.query("overwrite") === "true"), 200));
}
