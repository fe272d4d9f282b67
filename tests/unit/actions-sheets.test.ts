import { generateKeyPairSync } from "node:crypto";
import { delay, http, HttpResponse } from "msw";
import { afterAll, afterEach, describe, expect, test, vi } from "vitest";
import {
  NOT_CONFIGURED,
  SHEETS_TIMEOUT_MS,
  createGoogleSheetsClientFactory,
  createSheetsAction,
  googleSheetsClientFactory,
  serviceAccountEmail,
  setSheetsClientFactory,
  sheetsAction,
  sheetsConfigSchema,
  testSpreadsheetAccess,
  type SheetsClient,
} from "@/lib/actions/sheets";
import { createActionContext, removeTempDirs, failure } from "../helpers/action-context";
import { server, useHttpMocks } from "../helpers/http";

useHttpMocks();
afterAll(removeTempDirs);
afterEach(() => setSheetsClientFactory(null));

const EMAIL = "whenthen@my-project.iam.gserviceaccount.com";
const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
const KEY = {
  type: "service_account",
  project_id: "my-project",
  client_email: EMAIL,
  private_key: privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
  token_uri: "https://oauth2.googleapis.com/token",
};
const KEY_B64 = Buffer.from(JSON.stringify(KEY)).toString("base64");
const SHEET_ID = "1AbCdEfGhIjKlMnOpQrStUvWxYz0123456789_-abcd";

/** A stand-in for the Google client with the real call shape; records every append. */
type AppendFn = SheetsClient["spreadsheets"]["values"]["append"];

function mockClient(answer: AppendFn = async () => ({ data: { updates: { updatedRange: "'Leads'!A7:C7", updatedRows: 1 } } })) {
  const append = vi.fn<AppendFn>(answer);
  const get = vi.fn<SheetsClient["spreadsheets"]["get"]>(async () => ({ data: { properties: { title: "Leads 2026" } } }));
  const client: SheetsClient = { spreadsheets: { get, values: { append } } };
  const factory = vi.fn(() => client);
  return { append, get, factory };
}

const configured = () => createActionContext({ env: { GOOGLE_SERVICE_ACCOUNT_JSON: KEY_B64 } });

const googleError = (status: number, message: string, headers: Record<string, string> = {}) =>
  Object.assign(new Error(message), { status, response: { status, headers: new Headers(headers) } });

describe("sheets action", () => {
  test("AC10: values.append is called once with the rendered columns in order, USER_ENTERED, INSERT_ROWS and the configured range", async () => {
    const { append, factory } = mockClient();
    const action = createSheetsAction({ clientFactory: factory });
    const config = sheetsConfigSchema.parse({
      spreadsheet_id: SHEET_ID,
      sheet_name: "Leads",
      columns: ["2026-03-01 12:00", "Ada Lovelace", "ada@example.com"],
    });
    const result = await action.run(config, configured());

    expect(append).toHaveBeenCalledTimes(1);
    expect(append).toHaveBeenCalledWith({
      spreadsheetId: SHEET_ID,
      range: "'Leads'!A1",
      valueInputOption: "USER_ENTERED",
      insertDataOption: "INSERT_ROWS",
      requestBody: { values: [["2026-03-01 12:00", "Ada Lovelace", "ada@example.com"]] },
    });
    expect(factory).toHaveBeenCalledWith(expect.objectContaining({ client_email: EMAIL }));
    expect(result.output).toEqual({ updated_range: "'Leads'!A7:C7", updated_rows: 1, spreadsheet_id: SHEET_ID });
  });

  test("AC10: sheet names are quoted with ' doubled; the sheet's URL works as its id", async () => {
    const { append, factory } = mockClient();
    const action = createSheetsAction({ clientFactory: factory });
    await action.run(
      { spreadsheet_id: `https://docs.google.com/spreadsheets/d/${SHEET_ID}/edit#gid=0`, sheet_name: "Bob's 2026!", columns: ["x"] },
      configured(),
    );
    expect(append.mock.calls[0]?.[0]).toMatchObject({ spreadsheetId: SHEET_ID, range: "'Bob''s 2026!'!A1" });
  });

  test("AC10: without GOOGLE_SERVICE_ACCOUNT_JSON the action is unavailable and fails with a clear, non-retryable error", async () => {
    const { append, factory } = mockClient();
    const action = createSheetsAction({ clientFactory: factory });
    const ctx = createActionContext();
    expect(action.available?.(ctx)).toBe(false);
    expect(action.available?.(configured())).toBe(true);
    const err = await failure(action.run({ spreadsheet_id: SHEET_ID, sheet_name: "Leads", columns: ["x"] }, ctx));
    expect(err.message).toBe(NOT_CONFIGURED);
    expect(err.message).toBe("sheets: not configured — set GOOGLE_SERVICE_ACCOUNT_JSON (base64 of the service account key JSON)");
    expect(err.retryable).toBe(false);
    expect(append).not.toHaveBeenCalled();
  });

  test("a key that is not a service account key fails clearly", async () => {
    const { factory } = mockClient();
    const ctx = createActionContext({ env: { GOOGLE_SERVICE_ACCOUNT_JSON: Buffer.from('{"type":"authorized_user"}').toString("base64") } });
    const err = await failure(createSheetsAction({ clientFactory: factory }).run({ spreadsheet_id: SHEET_ID, sheet_name: "S", columns: ["x"] }, ctx));
    expect(err.retryable).toBe(false);
    expect(err.message).toMatch(/GOOGLE_SERVICE_ACCOUNT_JSON is not a usable service account key/);
  });

  test("serviceAccountEmail reads the key (base64 or raw JSON) for the settings page", () => {
    expect(serviceAccountEmail({ googleServiceAccountJson: KEY_B64 })).toBe(EMAIL);
    expect(serviceAccountEmail({ googleServiceAccountJson: JSON.stringify(KEY) })).toBe(EMAIL);
    expect(serviceAccountEmail({ googleServiceAccountJson: undefined })).toBeNull();
    expect(serviceAccountEmail({ googleServiceAccountJson: "bm9wZQ==" })).toBeNull();
  });

  test("403 tells the user to share the sheet with the service account email, without retry", async () => {
    const { factory } = mockClient(async () => {
      throw googleError(403, "The caller does not have permission");
    });
    const err = await failure(createSheetsAction({ clientFactory: factory }).run({ spreadsheet_id: SHEET_ID, sheet_name: "Leads", columns: ["x"] }, configured()));
    expect(err.retryable).toBe(false);
    expect(err.message).toContain(`share the sheet with ${EMAIL}`);
  });

  test("404 and a missing tab fail without retry, each saying what to check", async () => {
    let next = googleError(404, "Requested entity was not found.");
    const { factory } = mockClient(async () => {
      throw next;
    });
    const action = createSheetsAction({ clientFactory: factory });
    const config = { spreadsheet_id: SHEET_ID, sheet_name: "Nope", columns: ["x"] };
    const notFound = await failure(action.run(config, configured()));
    expect(notFound.retryable).toBe(false);
    expect(notFound.message).toContain(`spreadsheet "${SHEET_ID}" was not found`);

    next = googleError(400, "Unable to parse range: 'Nope'!A1");
    const noTab = await failure(action.run(config, configured()));
    expect(noTab.retryable).toBe(false);
    expect(noTab.message).toContain('no sheet (tab) named "Nope"');
  });

  test("429 and 5xx from Google are retryable, with Retry-After honoured; network errors too", async () => {
    let next: unknown = googleError(429, "Quota exceeded", { "retry-after": "20" });
    const { factory } = mockClient(async () => {
      throw next;
    });
    const action = createSheetsAction({ clientFactory: factory });
    const config = { spreadsheet_id: SHEET_ID, sheet_name: "Leads", columns: ["x"] };
    const quota = await failure(action.run(config, configured()));
    expect(quota.retryable).toBe(true);
    expect(quota.retryAfterMs).toBe(20_000);

    next = googleError(503, "The service is currently unavailable.");
    expect((await failure(action.run(config, configured()))).retryable).toBe(true);

    next = Object.assign(new Error("socket hang up"), { code: "ECONNRESET" });
    expect((await failure(action.run(config, configured()))).retryable).toBe(true);
  });

  test("one client per key: the access token is reused across runs", async () => {
    const { append, factory } = mockClient();
    const action = createSheetsAction({ clientFactory: factory });
    const config = { spreadsheet_id: SHEET_ID, sheet_name: "Leads", columns: ["x"] };
    await action.run(config, configured());
    await action.run(config, configured());
    expect(append).toHaveBeenCalledTimes(2);
    expect(factory).toHaveBeenCalledTimes(1);
  });

  test("setSheetsClientFactory swaps the client behind the registered action", async () => {
    const { append, factory } = mockClient();
    setSheetsClientFactory(factory);
    await sheetsAction.run({ spreadsheet_id: SHEET_ID, sheet_name: "Leads", columns: ["a", "b"] }, configured());
    expect(append).toHaveBeenCalledTimes(1);
  });

  test("config: columns must be a non-empty list of templates; unknown keys are refused", () => {
    expect(sheetsConfigSchema.safeParse({ spreadsheet_id: SHEET_ID, sheet_name: "S", columns: [] }).success).toBe(false);
    expect(sheetsConfigSchema.safeParse({ spreadsheet_id: SHEET_ID, sheet_name: "S", columns: "a,b" }).success).toBe(false);
    expect(sheetsConfigSchema.safeParse({ spreadsheet_id: SHEET_ID, sheet_name: "S", columns: ["a"], range: "A1" }).success).toBe(false);
    expect(sheetsConfigSchema.safeParse({ spreadsheet_id: "", sheet_name: "S", columns: ["a"] }).success).toBe(false);
  });

  test("the real client signs a JWT with the key and appends through the Sheets REST API", async () => {
    const seen: { token?: string; append?: { url: string; auth: string | null; body: unknown } } = {};
    server.use(
      http.post("https://oauth2.googleapis.com/token", async ({ request }) => {
        seen.token = await request.text();
        return HttpResponse.json({ access_token: "ya29.test-token", expires_in: 3600, token_type: "Bearer" });
      }),
      http.post("https://sheets.googleapis.com/v4/spreadsheets/:id/values/:range", async ({ request }) => {
        seen.append = { url: request.url, auth: request.headers.get("authorization"), body: await request.json() };
        return HttpResponse.json({ spreadsheetId: SHEET_ID, updates: { updatedRange: "Leads!A2:B2", updatedRows: 1 } });
      }),
    );
    const action = createSheetsAction({ clientFactory: googleSheetsClientFactory });
    const result = await action.run({ spreadsheet_id: SHEET_ID, sheet_name: "Leads", columns: ["=1+1", "ok"] }, configured());

    expect(seen.token).toContain("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer");
    const url = new URL(seen.append!.url);
    expect(decodeURIComponent(url.pathname)).toBe(`/v4/spreadsheets/${SHEET_ID}/values/'Leads'!A1:append`);
    expect(url.searchParams.get("valueInputOption")).toBe("USER_ENTERED");
    expect(url.searchParams.get("insertDataOption")).toBe("INSERT_ROWS");
    expect(seen.append!.auth).toBe("Bearer ya29.test-token");
    expect(seen.append!.body).toEqual({ values: [["=1+1", "ok"]] });
    expect(result.output).toMatchObject({ updated_range: "Leads!A2:B2" });
  });
});

describe("sheets: every call to Google is bounded", () => {
  const config = { spreadsheet_id: SHEET_ID, sheet_name: "Leads", columns: ["x"] };
  const tokenOk = http.post("https://oauth2.googleapis.com/token", () => HttpResponse.json({ access_token: "ya29.test-token", expires_in: 3600, token_type: "Bearer" }));

  test("the real client's timeout is within the design's 15–20 s", () => {
    expect(SHEETS_TIMEOUT_MS).toBeGreaterThanOrEqual(15_000);
    expect(SHEETS_TIMEOUT_MS).toBeLessThanOrEqual(20_000);
  });

  test("a Sheets API that never answers fails retryably once the timeout passes", async () => {
    let appends = 0;
    server.use(
      tokenOk,
      http.post("https://sheets.googleapis.com/v4/spreadsheets/:id/values/:range", async () => {
        appends++;
        await delay("infinite");
        return HttpResponse.json({});
      }),
    );
    const action = createSheetsAction({ clientFactory: createGoogleSheetsClientFactory({ timeoutMs: 300 }) });
    const started = performance.now();
    const err = await failure(action.run(config, configured()));
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(err.retryable).toBe(true);
    expect(err.message).toMatch(/sheets: could not reach Google.*(timeout|timed out)/i);
    // Not re-sent by the client: the run's own retry policy decides (an append is not idempotent).
    expect(appends).toBe(1);
  });

  test("a token endpoint that never answers fails retryably once the timeout passes", async () => {
    server.use(
      http.post("https://oauth2.googleapis.com/token", async () => {
        await delay("infinite");
        return HttpResponse.json({});
      }),
    );
    const action = createSheetsAction({ clientFactory: createGoogleSheetsClientFactory({ timeoutMs: 300 }) });
    const started = performance.now();
    const err = await failure(action.run(config, configured()));
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(err.retryable).toBe(true);
  });
});

describe("sheets: a key whose private_key is unusable", () => {
  const broken = Buffer.from(JSON.stringify({ ...KEY, private_key: "-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n" })).toString("base64");

  test("the Settings test says the key is not usable (not 'could not reach Google') and calls nothing", async () => {
    const { factory } = mockClient();
    setSheetsClientFactory(factory);
    const r = await testSpreadsheetAccess({ googleServiceAccountJson: broken }, SHEET_ID);
    expect(r.ok).toBe(false);
    expect(!r.ok && r.error).toMatch(/^sheets: GOOGLE_SERVICE_ACCOUNT_JSON is not a usable service account key: .*private_key/);
    expect(!r.ok && r.error).not.toMatch(/could not reach Google/);
    expect(factory).not.toHaveBeenCalled();
  });

  test("the real client's Settings test gives the same message", async () => {
    const r = await testSpreadsheetAccess({ googleServiceAccountJson: broken }, SHEET_ID);
    expect(!r.ok && r.error).toMatch(/not a usable service account key/);
  });

  test("the action fails without retry, with the same message", async () => {
    const ctx = createActionContext({ env: { GOOGLE_SERVICE_ACCOUNT_JSON: broken } });
    const err = await failure(createSheetsAction({ clientFactory: googleSheetsClientFactory }).run({ spreadsheet_id: SHEET_ID, sheet_name: "S", columns: ["x"] }, ctx));
    expect(err.retryable).toBe(false);
    expect(err.message).toMatch(/not a usable service account key/);
  });

  test("an OpenSSL error from the Google client is not taken for a network error", async () => {
    const { factory } = mockClient(async () => {
      throw Object.assign(new Error("error:1E08010C:DECODER routines::unsupported"), { code: "ERR_OSSL_UNSUPPORTED" });
    });
    const err = await failure(createSheetsAction({ clientFactory: factory }).run({ spreadsheet_id: SHEET_ID, sheet_name: "S", columns: ["x"] }, configured()));
    expect(err.retryable).toBe(false);
    expect(err.message).not.toMatch(/could not reach Google/);
  });
});

describe("the Settings page's sheet test", () => {
  test("reads the spreadsheet title with the configured service account", async () => {
    const { get, factory } = mockClient();
    setSheetsClientFactory(factory);
    try {
      const r = await testSpreadsheetAccess({ googleServiceAccountJson: KEY_B64 }, "https://docs.google.com/spreadsheets/d/1AbC_dEf-123/edit#gid=0");
      expect(r).toEqual({ ok: true, title: "Leads 2026", spreadsheet_id: "1AbC_dEf-123" });
      expect(get).toHaveBeenCalledWith({ spreadsheetId: "1AbC_dEf-123", fields: "properties.title" });
    } finally {
      setSheetsClientFactory(null);
    }
  });

  test("explains a missing share, a bad id and a missing key instead of throwing", async () => {
    const { get, factory } = mockClient();
    get.mockRejectedValueOnce(Object.assign(new Error("The caller does not have permission"), { status: 403 }));
    setSheetsClientFactory(factory);
    try {
      const denied = await testSpreadsheetAccess({ googleServiceAccountJson: KEY_B64 }, "1AbC");
      expect(denied.ok).toBe(false);
      expect(!denied.ok && denied.error).toMatch(/share the sheet with .*@/);
      expect(await testSpreadsheetAccess({ googleServiceAccountJson: KEY_B64 }, "not an id!")).toMatchObject({ ok: false });
      expect(await testSpreadsheetAccess({ googleServiceAccountJson: undefined }, "1AbC")).toEqual({ ok: false, error: NOT_CONFIGURED });
    } finally {
      setSheetsClientFactory(null);
    }
  });
});
