import { Hono } from "hono";
import { z } from "zod";
import { testSpreadsheetAccess } from "../../actions/sheets";
import type { ApiDeps, ApiEnv } from "../env";
import { meta } from "../queries";
import { jsonBody } from "../validate";

const sheetsTestBody = z.strictObject({
  spreadsheet: z.string({ error: "spreadsheet must be text: the sheet's URL or id" }).default(""),
});

/** What the editor and the settings page read about this install, and the Sheets access check. */
export function settingsRoutes({ app }: ApiDeps) {
  return new Hono<ApiEnv>()
    .get("/api/meta", async (c) => c.json(await meta(app), 200))
    .post("/api/settings/sheets-test", jsonBody("sheets test", sheetsTestBody), async (c) => c.json(await testSpreadsheetAccess(app.config, c.req.valid("json").spreadsheet), 200));
}
