import { Hono } from "hono";
import { LIMITS } from "../../core/limits";
import type { VersionAuthor } from "../../db/store";
import { credentialViewOf, type ApiDeps, type ApiEnv } from "../env";
import { createCredentialMasks } from "../../applets/credential-masks";
import { z } from "zod";
import { authorOf } from "../../applets/versions";
import { jsonBody, queryParams } from "../validate";

const exportFile = z.array(z.unknown(), { error: "expected a JSON array of applets, as GET /api/export writes it" });

const exportQuery = z.object({ applet_id: z.string().optional() });
const importQuery = z.object({
  overwrite: z.enum(["true", "false"], { error: 'overwrite must be "true" or "false"' }).optional(),
  // What to do with an applet whose id exists here; `replace`: the ids that replace under "skip".
  existing: z.enum(["refuse", "replace", "skip"], { error: 'existing must be "refuse", "replace" or "skip"' }).optional(),
  replace: z.string().optional(),
});

/** Export files and their import. An export file is checked item by item by lib/applets/service.ts, every problem with its path. */
export function transferRoutes({ app, applets }: ApiDeps) {
  return new Hono<ApiEnv>()
    .get("/api/export", queryParams("export", exportQuery), async (c) => {
      const id = c.req.valid("query").applet_id;
      const all = id ? [await applets.exportOne(id)].filter((a) => a !== null) : await applets.exportAll();
      // For an API token, credentials written literally are masked; importing the file back over
      // these applets keeps them (lib/applets/service unmasks what matches).
      const masks = credentialViewOf(c).masked ? createCredentialMasks(app.config.sessionSecret) : null;
      const body = masks ? all.map((a) => ({ ...a, definition: masks.mask(a.definition) })) : all;
      const name = id ? `whenthen-applet-${id}.json` : `whenthen-applets-${app.clock.now().toISOString().slice(0, 10)}.json`;
      return c.json(body, 200, { "content-disposition": `attachment; filename="${name}"` });
    })
    // The items themselves are the service's to check: every problem of every item, with its index.
    .post("/api/import", queryParams("import", importQuery), jsonBody("import", exportFile, LIMITS.importBodyBytes), async (c) =>
      c.json(await importFile(applets, c.req.valid("json"), c.req.valid("query"), authorOf(c.get("user"))), 200),
    );
}

/** ?existing=… wins; ?overwrite=true is "replace" (kept for older clients and the CLI). */
function importFile(applets: ApiDeps["applets"], items: unknown[], q: { overwrite?: string; existing?: "refuse" | "replace" | "skip"; replace?: string }, by: VersionAuthor) {
  const mode = q.existing ?? (q.overwrite === "true" ? "replace" : "refuse");
  return applets.import(items, mode, (q.replace ?? "").split(",").filter(Boolean), by);
}
