import { randomBytes } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { createApi, type Api } from "@/lib/api";
import { createAuth } from "@/lib/auth";
import { createTestApp, type TestApp } from "../helpers/db";
import { forEachEngine, type TestEngine } from "../helpers/engines";
import { SLACK_WEBHOOK, sentTo, useHttpMocks } from "../helpers/http";
import { startWorker } from "../helpers/worker";

/**
 * Credentials written literally in an applet (a webhook's signing secret, a Slack webhook URL, an
 * Authorization header): masked in every stored version and in what API tokens read, warned about
 * on save, purgeable from a version, and kept out of the run log. On every engine.
 */
useHttpMocks();

const CREDENTIALS = { email: "owner@example.com", password: "correct horse battery" };
const LITERAL_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const LITERAL_BEARER = "sk_live_51HqLyjWDarjtT1zdp7dc";

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface Booted {
  app: TestApp;
  api: Api;
  cookie: string;
  rw: string;
  ro: string;
}

async function boot(engine: TestEngine): Promise<Booted> {
  const app = createTestApp({ engine });
  cleanups.push(() => app.cleanup());
  const api = createApi({ app, applets: app.applets, auth: createAuth(app) });
  const setup = await send(api, "POST", "/api/setup", { body: CREDENTIALS });
  const cookie = (setup.headers.get("set-cookie") ?? "").split(";")[0]!;
  const token = async (body: Record<string, unknown>) => ((await (await send(api, "POST", "/api/tokens", { cookie, body })).json()) as { token: string }).token;
  await app.secrets.set("GH_SECRET", LITERAL_SECRET);
  return { app, api, cookie, rw: await token({ name: "deploy" }), ro: await token({ name: "dashboard", read_only: true }) };
}

function send(api: Api, method: string, path: string, opts: { cookie?: string; token?: string; body?: unknown } = {}): Promise<Response> {
  const headers: Record<string, string> = {};
  if (opts.cookie) headers.cookie = opts.cookie;
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  const hasBody = method !== "GET" && method !== "HEAD";
  if (hasBody) headers["content-type"] = "application/json";
  return api.handle(new Request(`http://localhost:3000${path}`, { method, headers, body: hasBody ? JSON.stringify(opts.body ?? {}) : undefined }));
}

/** The answer as text (to look for a credential anywhere in it) and parsed. */
async function read<T = Record<string, unknown>>(res: Promise<Response>): Promise<{ status: number; text: string; json: T }> {
  const r = await res;
  const text = await r.text();
  return { status: r.status, text, json: JSON.parse(text) as T };
}

const signedWebhook = (secret: string) => ({
  version: 1,
  trigger: { type: "webhook", config: { verify: "github", hmac_secret: secret } },
  actions: [{ type: "slack", config: { webhook_url: SLACK_WEBHOOK, text: "{{trigger.body.title}}" } }],
});
const MASK = /^\[hidden credential [0-9a-f]{12}\]$/;

forEachEngine((engine) => {
  describe("credentials in version history and in what API tokens read", () => {
    it("a signing secret written literally, then moved to {{secrets.X}}, is masked in version 1 for a read-only token and for the session; the save warned", async () => {
      const b = await boot(engine);
      const created = await read<{ applet: { id: string }; warnings: { path: string; message: string }[] }>(send(b.api, "POST", "/api/applets", { cookie: b.cookie, body: { name: "signed", definition: signedWebhook(LITERAL_SECRET) } }));
      expect(created.status).toBe(201);
      expect(created.json.warnings).toEqual(
        expect.arrayContaining([
          { path: "definition.trigger.config.hmac_secret", message: expect.stringMatching(/^Trigger: Secret is written literally, so it is stored in the applet and in every version of its history: move it to a secret/) },
          { path: "definition.actions.0.config.webhook_url", message: expect.stringMatching(/^Action 1 \(slack\): Webhook URL is written literally/) },
        ]),
      );
      const id = created.json.applet.id;
      const moved = await read<{ warnings: { path: string }[] }>(send(b.api, "PUT", `/api/applets/${id}`, { cookie: b.cookie, body: { definition: { ...signedWebhook("{{secrets.GH_SECRET}}"), actions: [{ type: "slack", config: { webhook_url: "{{secrets.GH_SECRET}}", text: "x" } }] } } }));
      expect(moved.status).toBe(200);
      expect(moved.json.warnings).toEqual([]);

      for (const [who, auth] of [["read-only token", { token: b.ro }], ["session", { cookie: b.cookie }]] as const) {
        const v1 = await read<{ version: { definition: { trigger: { config: { hmac_secret: string } }; actions: { config: { webhook_url: string } }[] }; literal_credentials: string[] } }>(send(b.api, "GET", `/api/applets/${id}/versions/1`, auth));
        expect(v1.status, who).toBe(200);
        expect(v1.text, who).not.toContain(LITERAL_SECRET);
        expect(v1.text, who).not.toContain(SLACK_WEBHOOK);
        expect(v1.json.version.definition.trigger.config.hmac_secret, who).toMatch(MASK);
        expect(v1.json.version.literal_credentials, who).toEqual(["Trigger: Secret", "Action 1 (slack): Webhook URL"]);
        const list = await read<{ versions: { version: number; literal_credentials: string[] }[] }>(send(b.api, "GET", `/api/applets/${id}/versions`, auth));
        expect(list.json.versions.map((v) => [v.version, v.literal_credentials.length]), who).toEqual([
          [2, 0],
          [1, 2],
        ]);
        // The current version names the secret: shown as written.
        const v2 = await read<{ version: { definition: { trigger: { config: { hmac_secret: string } } } } }>(send(b.api, "GET", `/api/applets/${id}/versions/2`, auth));
        expect(v2.json.version.definition.trigger.config.hmac_secret).toBe("{{secrets.GH_SECRET}}");
      }
    });

    it("the current definition's literal credentials are masked for every API token (detail, export, a save's answer, alerts) and shown as written to the signed-in owner", async () => {
      const b = await boot(engine);
      const definition = {
        version: 1,
        trigger: { type: "webhook", config: {} },
        actions: [
          { type: "slack", config: { webhook_url: SLACK_WEBHOOK, text: "hi" } },
          { type: "http", config: { url: "https://status.test/status/200", headers: { Authorization: `Bearer ${LITERAL_BEARER}`, "X-Request-Source": "whenthen" } } },
        ],
      };
      const created = await read<{ applet: { id: string } }>(send(b.api, "POST", "/api/applets", { token: b.rw, body: { name: "literal", definition } }));
      expect(created.status).toBe(201);
      expect(created.text).not.toContain(LITERAL_BEARER);
      const id = created.json.applet.id;
      await send(b.api, "PUT", `/api/applets/${id}/alerts`, { cookie: b.cookie, body: { channel: { type: "slack", config: { webhook_url: SLACK_WEBHOOK } } } });
      for (const token of [b.ro, b.rw]) {
        for (const path of [`/api/applets/${id}`, "/api/export", `/api/export?applet_id=${id}`]) {
          const r = await read(send(b.api, "GET", path, { token }));
          expect(r.status, path).toBe(200);
          expect(r.text, path).not.toContain(SLACK_WEBHOOK);
          expect(r.text, path).not.toContain(LITERAL_BEARER);
          // What is not a credential is shown as written.
          expect(r.text, path).toContain('"X-Request-Source":"whenthen"');
        }
      }
      const detail = await read<{ applet: { definition: { steps: { config: { webhook_url?: string; headers?: Record<string, string> } }[] } } }>(send(b.api, "GET", `/api/applets/${id}`, { token: b.ro }));
      expect(detail.json.applet.definition.steps[0]!.config.webhook_url).toMatch(MASK);
      expect(detail.json.applet.definition.steps[1]!.config.headers!.Authorization).toMatch(MASK);
      const owner = await read(send(b.api, "GET", `/api/applets/${id}`, { cookie: b.cookie }));
      expect(owner.text).toContain(SLACK_WEBHOOK);
      expect(owner.text).toContain(LITERAL_BEARER);
    });

    it("a masked definition saved back (a token's GET then PUT, its export imported over the applet) keeps the stored credentials; a mask this applet does not hold is refused at its field", async () => {
      const b = await boot(engine);
      const created = await read<{ applet: { id: string } }>(send(b.api, "POST", "/api/applets", { cookie: b.cookie, body: { name: "round trip", definition: signedWebhook(LITERAL_SECRET) } }));
      const id = created.json.applet.id;
      const got = await read<{ applet: { definition: { steps: { config: Record<string, unknown> }[] } } }>(send(b.api, "GET", `/api/applets/${id}`, { token: b.rw }));
      const masked = got.json.applet.definition;
      masked.steps[0]!.config.text = "edited through the API";
      expect((await send(b.api, "PUT", `/api/applets/${id}`, { token: b.rw, body: { definition: masked } })).status).toBe(200);
      const stored = (await b.app.store.applets.get(id))!.definition as { trigger: { config: { hmac_secret: string } }; steps: { config: { webhook_url: string; text: string } }[] };
      expect(stored.trigger.config.hmac_secret).toBe(LITERAL_SECRET);
      expect(stored.steps[0]!.config).toMatchObject({ webhook_url: SLACK_WEBHOOK, text: "edited through the API" });

      const exported = (await read<Record<string, unknown>[]>(send(b.api, "GET", `/api/export?applet_id=${id}`, { token: b.rw }))).json;
      expect((await send(b.api, "POST", "/api/import?overwrite=true", { token: b.rw, body: exported })).status).toBe(200);
      expect(((await b.app.store.applets.get(id))!.definition as typeof stored).trigger.config.hmac_secret).toBe(LITERAL_SECRET);
      // The same file (an export writes version 2) as a new applet elsewhere: there is nothing to unmask it with.
      const elsewhere = [{ ...exported[0], id: "copy-of-round-trip", webhook_token: randomBytes(32).toString("base64url") }];
      const refused = await read<{ problems: { path: string; message: string }[] }>(send(b.api, "POST", "/api/import", { token: b.rw, body: elsewhere }));
      expect(refused.status).toBe(400);
      expect(refused.json.problems.map((p) => p.path).sort()).toEqual(["0.definition.steps.0.config.webhook_url", "0.definition.trigger.config.hmac_secret"]);
      expect(refused.json.problems).toEqual(
        expect.arrayContaining([{ path: "0.definition.trigger.config.hmac_secret", message: expect.stringMatching(/^Trigger: Secret is a hidden credential \(\[hidden credential [0-9a-f]{12}\]\) that this applet does not hold; write the credential here/) }]),
      );
      // Only the field's own words: not also the Slack plug-in's "not a URL".
      expect(refused.json.problems.filter((p) => p.path === "0.definition.steps.0.config.webhook_url")).toHaveLength(1);
      expect(await b.app.store.applets.get("copy-of-round-trip")).toBeNull();
    });

    it("'purge this version's credentials' rewrites the stored version (session or a read-write token, never read-only), refuses the current version, and a purged version cannot be restored as it is", async () => {
      const b = await boot(engine);
      const id = (await read<{ applet: { id: string } }>(send(b.api, "POST", "/api/applets", { cookie: b.cookie, body: { name: "purge", definition: signedWebhook(LITERAL_SECRET) } }))).json.applet.id;
      // Version 1 is current and still uses its credentials: purging it would break the applet.
      const current = await read<{ error: string }>(send(b.api, "POST", `/api/applets/${id}/versions/1/purge-credentials`, { cookie: b.cookie }));
      expect(current.status).toBe(400);
      expect(current.json.error).toMatch(/^purge: version 1 is the applet's current definition, which still uses Trigger: Secret, Action 1 \(slack\): Webhook URL; move them to a secret/);
      await send(b.api, "PUT", `/api/applets/${id}`, { cookie: b.cookie, body: { definition: { ...signedWebhook("{{secrets.GH_SECRET}}"), actions: [{ type: "slack", config: { webhook_url: "{{secrets.GH_SECRET}}", text: "x" } }] } } });

      expect((await send(b.api, "POST", `/api/applets/${id}/versions/1/purge-credentials`, { token: b.ro })).status).toBe(403);
      const purged = await read<{ version: number; purged: string[] }>(send(b.api, "POST", `/api/applets/${id}/versions/1/purge-credentials`, { token: b.rw }));
      expect(purged.status).toBe(200);
      expect(purged.json).toEqual({ version: 1, purged: ["Trigger: Secret", "Action 1 (slack): Webhook URL"] });
      // Gone where it is stored, not only from the views.
      const rows = await b.app.sql.all<{ version: number; definition: unknown }>("SELECT version, definition FROM applet_versions WHERE applet_id = ? ORDER BY version", id);
      const raw = JSON.stringify(rows);
      expect(raw).not.toContain(LITERAL_SECRET);
      expect(raw).not.toContain(SLACK_WEBHOOK);
      const v1 = (await b.app.store.applets.version(id, 1))!;
      expect(v1.definition).toMatchObject({ trigger: { config: { verify: "github", hmac_secret: "[credential purged]" } }, steps: [{ config: { webhook_url: "[credential purged]", text: "{{trigger.body.title}}" } }] });
      const list = await read<{ versions: { version: number; literal_credentials: string[]; credentials_purged: boolean }[] }>(send(b.api, "GET", `/api/applets/${id}/versions`, { cookie: b.cookie }));
      expect(list.json.versions.find((v) => v.version === 1)).toMatchObject({ literal_credentials: [], credentials_purged: true });
      // Purging again finds nothing to purge.
      expect((await read(send(b.api, "POST", `/api/applets/${id}/versions/1/purge-credentials`, { cookie: b.cookie }))).json).toEqual({ version: 1, purged: [] });
      const restore = await read<{ error: string; problems: { path: string; message: string }[] }>(send(b.api, "POST", `/api/applets/${id}/versions/1/restore`, { cookie: b.cookie }));
      expect(restore.status).toBe(400);
      expect(restore.json.problems).toContainEqual({ path: "definition.trigger.config.hmac_secret", message: expect.stringMatching(/^Trigger: Secret was purged from this version \("\[credential purged\]"\); write \{\{secrets\.NAME\}\} here/) });
      expect((await b.app.store.applets.get(id))!.version).toBe(2);
    });

    it("a literal credential an action sends (an Authorization header, a Slack URL) goes out as written and is redacted from the run log", async () => {
      const b = await boot(engine);
      const applet = await b.app.applets.create({
        name: "run log",
        definition: {
          version: 1,
          trigger: { type: "webhook", config: {} },
          actions: [
            { type: "http", config: { url: "https://status.test/status/200", headers: { Authorization: `Bearer ${LITERAL_BEARER}` } } },
            { type: "slack", config: { webhook_url: SLACK_WEBHOOK, text: "sent" } },
          ],
        },
      });
      const { runId } = await b.app.applets.test(applet.id, { body: {} });
      const worker = startWorker(b.app);
      try {
        await worker.drain();
      } finally {
        await worker.stop();
      }
      const run = (await b.app.store.runs.get(runId))!;
      expect(run.status).toBe("succeeded");
      expect(sentTo("status").at(-1)!.headers.authorization).toBe(`Bearer ${LITERAL_BEARER}`);
      expect(sentTo("slack").at(-1)!.url).toBe(SLACK_WEBHOOK);
      const shown = await read(send(b.api, "GET", `/api/runs/${runId}`, { token: b.ro }));
      expect(shown.text).not.toContain(LITERAL_BEARER);
      expect(shown.text).not.toContain("XXXXXXXX");
      expect(shown.text).toContain("[redacted]");
    });
  });
});
