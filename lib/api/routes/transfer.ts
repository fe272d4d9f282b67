import { Hono } from "hono";
import { LIMITS } from "../../core/limits";
import type { ApiDeps, ApiEnv } from "../env";
import { z } from "zod";
import { jsonBody, queryParams } from "../validate";

const exportFile = z.array(z.unknown(), { error: "expected a JSON array of applets, as GET /api/export writes it" });

const exportQuery = z.object({ applet_id: z.string().optional() });
const importQuery = z.object({ overwrite: z.enum(["true", "false"], { error: 'overwrite must be "true" or "false"' }).optional() });

/** Export files and their import. An export file is checked item by item by lib/applets/service.ts, every problem with its path. */
export function transferRoutes({ app, applets }: ApiDeps) {
  return new Hono<ApiEnv>()
    .get("/api/export", queryParams("export", exportQuery), async (c) => {
      const id = c.req.valid("query").applet_id;
      const body = id ? [await applets.exportOne(id)].filter((a) => a !== null) : await applets.exportAll();
      const name = id ? `whenthen-applet-${id}.json` : `whenthen-applets-${app.clock.now().toISOString().slice(0, 10)}.json`;
      return c.json(body, 200, { "content-disposition": `attachment; filename="${name}"` });
    })
    // The items themselves are the service's to check: every problem of every item, with its index.
    .post("/api/import", queryParams("import", importQuery), jsonBody("import", exportFile, LIMITS.importBodyBytes), async (c) =>
      c.json(await applets.import(c.req.valid("json"), c.req.valid("query").overwrite === "true"), 200),
    );
}
