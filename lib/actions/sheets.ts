import { createPrivateKey } from "node:crypto";
import type { sheets_v4 } from "@googleapis/sheets";
import { z } from "zod";
import { field } from "../plugin";
import type { AppConfig } from "../core/config";
import { ActionError, errorMessage } from "../core/errors";
import { clampRetryAfter, requireRendered, requiredText } from "./common";
import type { ActionPlugin } from "./types";

/**
 * Appends one row to a Google Sheet with a service account (GOOGLE_SERVICE_ACCOUNT_JSON, the key
 * JSON base64 encoded). This is the one action that needs a Google account: Sheets has no other
 * API. The user shares the sheet with the service account's email, shown on the settings page
 * (`serviceAccountEmail`).
 *
 * USER_ENTERED makes Sheets parse each value as if typed, so dates land as dates and numbers as
 * numbers — and a value starting with "=" becomes a formula. That is what the spec asks for; a
 * column fed by strangers' data can prefix it with "'" in the template to keep it text.
 */

export const NOT_CONFIGURED = "sheets: not configured — set GOOGLE_SERVICE_ACCOUNT_JSON (base64 of the service account key JSON)";
const SCOPES = ["https://www.googleapis.com/auth/spreadsheets"];

export interface ServiceAccountKey {
  client_email: string;
  private_key: string;
  project_id?: string;
}

/** The slice of the Google client this action uses, in its real shape, so a test can stand in for it. */
export interface SheetsClient {
  spreadsheets: {
    /** Settings' "Test" button: reads the title only. */
    get(params: sheets_v4.Params$Resource$Spreadsheets$Get): Promise<{ data: sheets_v4.Schema$Spreadsheet }>;
    values: {
      append(params: sheets_v4.Params$Resource$Spreadsheets$Values$Append): Promise<{ data: sheets_v4.Schema$AppendValuesResponse }>;
    };
  };
}

export type SheetsClientFactory = (key: ServiceAccountKey) => SheetsClient | Promise<SheetsClient>;

/** Every request to Google (the token exchange and the Sheets call) gives up after this (DESIGN: 15–20 s). */
export const SHEETS_TIMEOUT_MS = 15_000;

/**
 * The real client: @googleapis/sheets with a JWT signed by the service account key. Imported on
 * first use: loading it takes ~450 ms, which every process that merely lists the actions (the
 * web process, tests) would otherwise pay at start-up.
 *
 * Bounded: gaxios `timeout` on the API client and on the JWT's own transporter (the token request).
 * The client's own retries are off: an append is not idempotent, and the run's retry policy
 * (with its backoff) is the one place that decides to try again.
 */
export function createGoogleSheetsClientFactory(opts: { timeoutMs?: number } = {}): SheetsClientFactory {
  const timeout = opts.timeoutMs ?? SHEETS_TIMEOUT_MS;
  return async (key) => {
    const { auth, sheets } = await import("@googleapis/sheets");
    return sheets({
      version: "v4",
      auth: new auth.JWT({ email: key.client_email, key: key.private_key, scopes: SCOPES, transporterOptions: { timeout, retry: false } }),
      timeout,
      retry: false,
    });
  };
}

export const googleSheetsClientFactory: SheetsClientFactory = createGoogleSheetsClientFactory();

let defaultFactory: SheetsClientFactory = googleSheetsClientFactory;
const defaultClients = new Map<string, Promise<SheetsClient>>();

/**
 * Replaces the client behind the registered `sheets` action (integration tests mock Google here).
 * `null` restores the real one.
 */
export function setSheetsClientFactory(factory: SheetsClientFactory | null): void {
  defaultFactory = factory ?? googleSheetsClientFactory;
  defaultClients.clear();
}

/**
 * The key is base64 of the JSON (as the spec says); raw JSON is accepted too, since pasting the
 * file's contents is the mistake everyone makes first.
 */
export function parseServiceAccountKey(raw: string): ServiceAccountKey {
  const text = raw.trim().startsWith("{") ? raw : Buffer.from(raw.trim(), "base64").toString("utf8");
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error("it is neither base64 of a JSON key file nor JSON");
  }
  const key = z
    .object({ client_email: z.string().min(1), private_key: z.string().min(1), project_id: z.string().optional() })
    .safeParse(parsed);
  if (!key.success) throw new Error('the JSON has no "client_email" and "private_key": is it a service account key?');
  // Checked here, not left to the first JWT signature: OpenSSL's "DECODER routines::unsupported"
  // deep in the Google client reads like a network failure and would be retried.
  try {
    createPrivateKey(key.data.private_key);
  } catch (err) {
    throw new Error(`its "private_key" is not a PEM private key (${errorMessage(err)}); download a new JSON key for the service account`, { cause: err });
  }
  return key.data;
}

/** For the settings page: the address the user shares the sheet with, or null when unset or unreadable. */
export function serviceAccountEmail(config: Pick<AppConfig, "googleServiceAccountJson">): string | null {
  if (!config.googleServiceAccountJson) return null;
  try {
    return parseServiceAccountKey(config.googleServiceAccountJson).client_email;
  } catch {
    return null;
  }
}

export const sheetsConfigSchema = z.strictObject({
  spreadsheet_id: field(requiredText("sheets", "spreadsheet_id"), {
        label: "Spreadsheet",
        kind: "text",
        required: true,
        template: true,
        help: "The id from the sheet's URL (docs.google.com/spreadsheets/d/<id>/edit), or the whole URL. Share the sheet with the service account email shown in Settings, as Editor.",
      }),
  sheet_name: field(requiredText("sheets", "sheet_name"), { label: "Sheet (tab) name", kind: "text", required: true, template: true, placeholder: "Sheet1" }),
  // Stored: templates (strings). Rendered: a cell that was exactly one {{…}} keeps its value's
  // JSON type, so a number is a number cell whatever the sheet's locale (see `cellValue`).
  columns: field(z.array(z.unknown()).min(1, { error: 'sheets: "columns" needs at least one column' }), {
        label: "Columns",
        kind: "list",
        item: { noun: "column", numbering: "letters" },
        required: true,
        template: true,
        help: "One template per cell, left to right. A cell that is exactly one {{…}} keeps its value's type (a number is a number cell); text is parsed as if typed: dates become dates, and text starting with = becomes a formula.",
      }),
});

/**
 * One rendered column → a Sheets cell value: strings (parsed as if typed, USER_ENTERED), numbers
 * and booleans as themselves, null as an empty cell, an object or array as its JSON text.
 */
export function cellValue(value: unknown): string | number | boolean {
  if (typeof value === "string" || typeof value === "boolean") return value;
  if (typeof value === "number") return Number.isFinite(value) ? value : String(value);
  if (value === null || value === undefined) return "";
  return JSON.stringify(value) ?? "";
}

export type SheetsConfig = z.output<typeof sheetsConfigSchema>;

/** `Sheet1` → `'Sheet1'!A1`; a quote inside the name is doubled, as in a Sheets formula. */
export const appendRange = (sheetName: string): string => `'${sheetName.replace(/'/g, "''")}'!A1`;

/** Accepts the bare id or the sheet's URL (https://docs.google.com/spreadsheets/d/<id>/edit). */
export function spreadsheetIdFrom(value: string): string {
  const s = value.trim();
  const fromUrl = /\/spreadsheets\/d\/([A-Za-z0-9_-]+)/.exec(s)?.[1];
  const id = fromUrl ?? s;
  if (!/^[A-Za-z0-9_-]+$/.test(id)) {
    throw new ActionError(`sheets: "spreadsheet_id" ${JSON.stringify(s.slice(0, 100))} is not a spreadsheet id or URL`, { retryable: false });
  }
  return id;
}

export function createSheetsAction(opts: { clientFactory?: SheetsClientFactory } = {}): ActionPlugin<SheetsConfig, { google_service_account_email: string | null }> {
  const clients = opts.clientFactory ? new Map<string, Promise<SheetsClient>>() : defaultClients;
  // One client per key, so the JWT's access token is reused across runs instead of fetched each
  // time; a changed key replaces it.
  const clientFor = (raw: string, key: ServiceAccountKey): Promise<SheetsClient> => {
    let client = clients.get(raw);
    if (!client) {
      const factory = opts.clientFactory ?? defaultFactory;
      client = Promise.resolve().then(() => factory(key));
      clients.clear();
      clients.set(raw, client);
      // A client that failed to build is not kept, so the next run tries again.
      client.catch(() => clients.get(raw) === client && clients.delete(raw));
    }
    return client;
  };

  return {
    type: "sheets",
    label: "Google Sheets row",
    description: "Append a row to a Google Sheet (needs a Google service account).",
    configSchema: sheetsConfigSchema,
    exampleConfig: { spreadsheet_id: "1BxiMVs0XRA5nFMdKvBdBZjgmUUqptlbs74OgvE2upms", sheet_name: "Sheet1", columns: ["{{trigger.body.title}}", "{{trigger.body.amount}}"] },
    typedConfig: ["columns"],
    available: ({ config }) => Boolean(config.googleServiceAccountJson),
    // The settings page: the address each sheet is shared with.
    facts: ({ config }) => ({ google_service_account_email: serviceAccountEmail(config) }),

    // The Sheets API request the client library would make for this append (the token exchange
    // before it carries no data of the run); no client is built, nothing is signed.
    async dryRun(config, ctx) {
      // What `run` refuses first, a dry run refuses too: without a key nothing could be appended.
      if (!ctx.config.googleServiceAccountJson) throw new ActionError(NOT_CONFIGURED, { retryable: false });
      const spreadsheetId = spreadsheetIdFrom(requireRendered("sheets", "spreadsheet_id", config.spreadsheet_id));
      const sheetName = requireRendered("sheets", "sheet_name", config.sheet_name).trim();
      const range = appendRange(sheetName);
      const values = [config.columns.map(cellValue)];
      const url = `https://sheets.googleapis.com/v4/spreadsheets/${encodeURIComponent(spreadsheetId)}/values/${encodeURIComponent(range)}:append?valueInputOption=USER_ENTERED&insertDataOption=INSERT_ROWS`;
      return {
        kind: "api",
        summary: `would append 1 row of ${values[0]!.length} cells to ${sheetName} in spreadsheet ${spreadsheetId}`,
        request: { method: "POST", url, headers: { authorization: "Bearer (the service account's access token)", "content-type": "application/json" }, body: JSON.stringify({ values }) },
      };
    },

    async run(config, ctx) {
      const raw = ctx.config.googleServiceAccountJson;
      if (!raw) throw new ActionError(NOT_CONFIGURED, { retryable: false });
      let key: ServiceAccountKey;
      try {
        key = parseServiceAccountKey(raw);
      } catch (err) {
        throw new ActionError(`sheets: GOOGLE_SERVICE_ACCOUNT_JSON is not a usable service account key: ${errorMessage(err)}`, {
          retryable: false,
        });
      }
      const spreadsheetId = spreadsheetIdFrom(requireRendered("sheets", "spreadsheet_id", config.spreadsheet_id));
      const sheetName = requireRendered("sheets", "sheet_name", config.sheet_name).trim();
      const range = appendRange(sheetName);

      let data: sheets_v4.Schema$AppendValuesResponse;
      try {
        const client = await clientFor(raw, key);
        ({ data } = await client.spreadsheets.values.append({
          spreadsheetId,
          range,
          valueInputOption: "USER_ENTERED",
          insertDataOption: "INSERT_ROWS",
          requestBody: { values: [config.columns.map(cellValue)] },
        }));
      } catch (err) {
        throw googleError(err, { key, spreadsheetId, sheetName });
      }
      return {
        output: {
          updated_range: data.updates?.updatedRange ?? null,
          updated_rows: data.updates?.updatedRows ?? null,
          spreadsheet_id: spreadsheetId,
        },
      };
    },
  };
}

export const sheetsAction = createSheetsAction();

/**
 * The Settings page's test: reads a spreadsheet's title with the configured service account, so
 * the user learns about a missing share or a disabled API before an applet fails on it.
 */
export async function testSpreadsheetAccess(
  config: Pick<AppConfig, "googleServiceAccountJson">,
  spreadsheet: string,
): Promise<{ ok: true; title: string; spreadsheet_id: string } | { ok: false; error: string }> {
  if (!config.googleServiceAccountJson) return { ok: false, error: NOT_CONFIGURED };
  let key: ServiceAccountKey;
  try {
    key = parseServiceAccountKey(config.googleServiceAccountJson);
  } catch (err) {
    return { ok: false, error: `sheets: GOOGLE_SERVICE_ACCOUNT_JSON is not a usable service account key: ${errorMessage(err)}` };
  }
  let spreadsheetId: string;
  try {
    spreadsheetId = spreadsheetIdFrom(spreadsheet);
  } catch (err) {
    return { ok: false, error: errorMessage(err) };
  }
  try {
    const client = await defaultFactory(key);
    const { data } = await client.spreadsheets.get({ spreadsheetId, fields: "properties.title" });
    return { ok: true, title: data.properties?.title ?? "(untitled)", spreadsheet_id: spreadsheetId };
  } catch (err) {
    return { ok: false, error: googleError(err, { key, spreadsheetId, sheetName: "" }).message };
  }
}

interface ErrorShape {
  status?: unknown;
  code?: unknown;
  message?: unknown;
  response?: { status?: unknown; headers?: unknown; data?: unknown };
}

/**
 * System errors (ECONNRESET, ETIMEDOUT, EAI_AGAIN, …) carry a string code: the network failed.
 * Node's own ERR_* codes (ERR_OSSL_UNSUPPORTED for a bad key, ERR_INVALID_ARG_TYPE) are not.
 * A gaxios timeout is normalised to the code "TimeoutError".
 */
const isNetworkError = (e: ErrorShape): boolean =>
  typeof e.code === "string" && ((/^E[A-Z_]+$/.test(e.code) && !e.code.startsWith("ERR_")) || e.code === "TimeoutError" || e.code === "AbortError");

/** Maps what the Google client throws (a GaxiosError, usually) to the queue's retry rule. */
export function googleError(err: unknown, at: { key: ServiceAccountKey; spreadsheetId: string; sheetName: string }): ActionError {
  const e: ErrorShape = typeof err === "object" && err !== null ? err : {};
  const status = [e.status, e.response?.status, e.code].find((v): v is number => typeof v === "number");
  const said = errorMessage(err);
  if (status === undefined) {
    const retryable = isNetworkError(e) || (err instanceof Error && (err.name === "AbortError" || err.name === "TimeoutError"));
    return new ActionError(`sheets: ${retryable ? "could not reach Google" : "the Google client failed"}: ${said}`, { retryable, cause: err });
  }
  if (status === 429 || status >= 500) {
    return new ActionError(`sheets: Google answered ${status}: ${said}`, {
      retryable: true,
      retryAfterMs: retryAfter(e.response?.headers),
      cause: err,
      output: { status },
    });
  }
  let message: string;
  if (status === 403 && /has not been used|is disabled|SERVICE_DISABLED/i.test(said)) {
    message = `sheets: the Google Sheets API is not enabled for the service account's project${at.key.project_id ? ` "${at.key.project_id}"` : ""}; enable it in the Google Cloud console (${said})`;
  } else if (status === 403) {
    message = `sheets: no access to spreadsheet "${at.spreadsheetId}" (403) — share the sheet with ${at.key.client_email} as Editor (${said})`;
  } else if (status === 404) {
    message = `sheets: spreadsheet "${at.spreadsheetId}" was not found (404) — check the id in the sheet's URL (${said})`;
  } else if (status === 400 && /parse range/i.test(said)) {
    message = `sheets: the spreadsheet has no sheet (tab) named ${JSON.stringify(at.sheetName)} (${said})`;
  } else if (status === 401 || /invalid_grant|invalid_client/i.test(said)) {
    message = `sheets: Google refused the service account key (${status}) — it may have been deleted, or this server's clock is wrong (${said})`;
  } else {
    message = `sheets: Google answered ${status}: ${said}`;
  }
  return new ActionError(message, { retryable: false, cause: err, output: { status } });
}

function retryAfter(headers: unknown): number | undefined {
  let value: unknown;
  if (headers instanceof Headers) value = headers.get("retry-after");
  else if (typeof headers === "object" && headers !== null) value = (headers as Record<string, unknown>)["retry-after"];
  const seconds = Number(value);
  return typeof value === "string" && Number.isFinite(seconds) ? clampRetryAfter(seconds * 1000) : undefined;
}

export default sheetsAction;
