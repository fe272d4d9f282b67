import { http, HttpResponse } from "msw";
import { afterEach, describe, expect, test, vi } from "vitest";
import { actionRegistry } from "@/lib/actions";
import { createSheetsAction, sheetsConfigSchema, type SheetsClient } from "@/lib/actions/sheets";
import { renderConfig } from "@/lib/template";
import { createActionContext, removeTempDirs } from "../helpers/action-context";
import { createTestApp } from "../helpers/db";
import { SLACK_WEBHOOK, sentTo, server, useHttpMocks } from "../helpers/http";
import { startWorker } from "../helpers/worker";

/**
 * A config string that is exactly one `{{…}}` keeps its ingredient's JSON type where the
 * action sends JSON values (the http body, Sheets cells, Slack blocks), through the real executor.
 */

useHttpMocks();

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  removeTempDirs();
});

describe("whole-value templates keep their JSON type", () => {
  test("the README's example sends \"amount\": 59.9 (a number) and the title as text, through the executor", async () => {
    const received: unknown[] = [];
    server.use(
      http.post("https://orders.example/orders", async ({ request }) => {
        received.push(await request.json());
        return HttpResponse.text("ok");
      }),
    );
    const app = createTestApp();
    const worker = startWorker(app);
    cleanups.push(() => app.cleanup(), () => worker.stop());
    // The applet of the README's "Try it with curl", byte for byte apart from the URL.
    const applet = await app.applets.create({
      name: "Orders to my service",
      definition: {
        version: 1,
        trigger: { type: "webhook", config: {} },
        actions: [{ type: "http", config: { url: "https://orders.example/orders", method: "POST", body: { title: "{{trigger.body.title | upper}}", amount: "{{trigger.body.amount}}" } } }],
      },
    });
    const { runId } = await app.applets.test(applet.id, { body: { title: "order paid", amount: 59.9 } });
    await worker.drain();
    expect((await app.store.runs.get(runId))!.status).toBe("succeeded");
    expect(received).toEqual([{ title: "ORDER PAID", amount: 59.9 }]);
  });

  test("the editor's http body in JSON (typed) mode sends amount 59.9 as a number from a config built by the form; Text mode sends the text as written", async () => {
    const { defaultsFor, fromForm, jsonModeProblem, modeKey, toForm } = await import("@/components/editor/fields");
    const received: string[] = [];
    server.use(
      http.post("https://orders.example/typed", async ({ request }) => {
        received.push(await request.text());
        return HttpResponse.text("ok");
      }),
    );
    const app = createTestApp();
    const worker = startWorker(app);
    cleanups.push(() => app.cleanup(), () => worker.stop());
    const fields = actionRegistry.get("http")!.fields;
    // A new http action starts in JSON (typed) mode; the user types the body as JSON.
    const cfg: Record<string, string | boolean | string[]> = { ...defaultsFor(fields), url: "https://orders.example/typed", body: '{"amount": "{{trigger.body.amount}}", "order": "{{trigger.body.order}}"}' };
    expect(cfg[modeKey("body")]).toBe("json");
    const config = fromForm(fields, cfg);
    expect(config.body).toEqual({ amount: "{{trigger.body.amount}}", order: "{{trigger.body.order}}" });
    // The same text in Text mode is sent as written (its templates rendered as text).
    const asText = fromForm(fields, { ...cfg, [modeKey("body")]: "text" });
    expect(asText.body).toBe('{"amount": "{{trigger.body.amount}}", "order": "{{trigger.body.order}}"}');
    for (const [name, c] of [["typed", config], ["text", asText]] as const) {
      const applet = await app.applets.create({ name, definition: { version: 1, trigger: { type: "webhook", config: {} }, actions: [{ type: "http", config: c }] } });
      const { runId } = await app.applets.test(applet.id, { body: { amount: 59.9, order: { id: 7 } } });
      await worker.drain();
      expect((await app.store.runs.get(runId))!.status).toBe("succeeded");
    }
    expect(JSON.parse(received[0]!)).toEqual({ amount: 59.9, order: { id: 7 } });
    // Text is text: each {{…}} becomes its text, and nothing escapes it for JSON.
    expect(received[1]).toBe('{"amount": "59.9", "order": "{"id":7}"}');
    // Reopened, a stored JSON body is shown in JSON (typed) mode and a stored text in Text mode.
    expect(toForm(fields, config)[modeKey("body")]).toBe("json");
    expect(toForm(fields, asText)[modeKey("body")]).toBe("text");
    // Text that is not JSON in JSON (typed) mode gets a clear error.
    expect(jsonModeProblem('{amount: "{{trigger.body.amount}}"}')).toMatch(/^Not valid JSON: .*choose Text/);
    expect(jsonModeProblem('{"amount": 1}')).toBeNull();
  });

  test("Slack blocks given as one {{trigger.body.blocks}} are sent as that array", async () => {
    const app = createTestApp();
    const worker = startWorker(app);
    cleanups.push(() => app.cleanup(), () => worker.stop());
    const blocks = [{ type: "section", text: { type: "mrkdwn", text: "*Paid*" } }];
    const applet = await app.applets.create({
      name: "blocks",
      definition: { version: 1, trigger: { type: "webhook", config: {} }, actions: [{ type: "slack", config: { webhook_url: SLACK_WEBHOOK, text: "Paid: {{trigger.body.amount}}", blocks: "{{trigger.body.blocks}}" } }] },
    });
    const { runId } = await app.applets.test(applet.id, { body: { amount: 59.9, blocks } });
    await worker.drain();
    expect((await app.store.runs.get(runId))!.status).toBe("succeeded");
    expect(JSON.parse(sentTo("slack")[0]!.body)).toEqual({ text: "Paid: 59.9", blocks });
  });

  test("Sheets cells keep numbers, booleans and empties; an object cell is its JSON text; mixed text stays text", async () => {
    type AppendFn = SheetsClient["spreadsheets"]["values"]["append"];
    const append = vi.fn<AppendFn>(async () => ({ data: { updates: { updatedRange: "'Orders'!A2:F2", updatedRows: 1 } } }));
    const client: SheetsClient = { spreadsheets: { get: vi.fn(), values: { append } } };
    const action = createSheetsAction({ clientFactory: () => client });
    const stored = { spreadsheet_id: "1AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", sheet_name: "Orders", columns: ["{{trigger.amount}}", "{{trigger.paid}}", "{{trigger.note}}", "{{trigger.meta}}", "EUR {{trigger.amount}}", "{{trigger.when}}"] };
    const trigger = { amount: 59.9, paid: false, note: null, meta: { id: 7 }, when: "2026-03-08 10:00" };
    const rendered = renderConfig(stored, { trigger }, { typedKeys: actionRegistry.get("sheets")!.typedConfig });
    const key = Buffer.from(JSON.stringify({ type: "service_account", client_email: "bot@p.iam.gserviceaccount.com", private_key: TEST_KEY })).toString("base64");
    await action.run(sheetsConfigSchema.parse(rendered.rendered), createActionContext({ env: { GOOGLE_SERVICE_ACCOUNT_JSON: key } }));
    expect(append.mock.calls[0]![0].requestBody).toEqual({ values: [[59.9, false, "", '{"id":7}', "EUR 59.9", "2026-03-08 10:00"]] });
  });
});

// A throwaway 1024-bit RSA key: the action only checks that it is a PEM private key.
const TEST_KEY = (await import("node:crypto")).generateKeyPairSync("rsa", { modulusLength: 1024 }).privateKey.export({ type: "pkcs8", format: "pem" }).toString();
