import { linkSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { http, HttpResponse } from "msw";
import { SMTPServer } from "smtp-server";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import { noteAction, noteConfigSchema } from "@/lib/actions/note";
import { createApi } from "@/lib/api";
import { testIdentity } from "../helpers/auth";
import { createLogger } from "@/lib/core/log";
import { createRedactor, redact } from "@/lib/secrets/redact";
import { createActionContext, makeTempDir, removeTempDirs } from "../helpers/action-context";
import { createTestApp, type TestApp } from "../helpers/db";
import { server, useHttpMocks } from "../helpers/http";
import { startWorker } from "../helpers/worker";

/**
 * A secret leaked into the runs table, GET /api/runs/:id and the log in forms the old
 * redaction did not know. Each failure kind runs through the real executor and worker loop on a
 * real SQLite file; afterwards every byte under DATA_DIR (database, WAL, everything) and every log
 * line is searched for the secret and its sensitive parts.
 */
useHttpMocks();

// A real SMTP server standing in for the relay (SMTP_URL), accepting everything.
let relay: SMTPServer;
let relayPort = 0;
beforeAll(async () => {
  relay = new SMTPServer({ authOptional: true, disabledCommands: ["STARTTLS"], logger: false, onData: (stream, _s, cb) => stream.on("end", () => cb()).resume() });
  await new Promise<void>((r) => relay.listen(0, "127.0.0.1", r));
  relayPort = (relay.server.address() as AddressInfo).port;
});
afterAll(async () => {
  await new Promise<void>((r) => relay.close(() => r()));
  removeTempDirs();
});

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface Scenario {
  app: TestApp;
  logs: string[];
  /** Runs one event through the applet and returns its run id once the worker is done. */
  run(definition: Record<string, unknown>): Promise<string>;
}

async function scenario(secrets: Record<string, string>, env: Record<string, string> = {}): Promise<Scenario> {
  const logs: string[] = [];
  const log = createLogger("whenthen", "debug", (line) => logs.push(line));
  // Notes are the action's delivered output, written where the user asked: outside DATA_DIR here,
  // so that everything under DATA_DIR is the app's own record of the run.
  const app = createTestApp({ env: { NOTES_ROOT: makeTempDir("whenthen-notes-"), SMTP_URL: `smtp://127.0.0.1:${relayPort}`, ...env }, log });
  for (const [name, value] of Object.entries(secrets)) await app.secrets.set(name, value);
  const worker = startWorker(app);
  cleanups.push(() => app.cleanup(), () => worker.stop());
  return {
    app,
    logs,
    async run(definition) {
      const a = await app.applets.create({ name: "leaky", definition: { version: 1, trigger: { type: "webhook", config: {} }, ...definition } });
      const { runId } = await app.applets.test(a.id, { body: { title: "hello" } });
      await worker.drain();
      return runId;
    },
  };
}

/** Every file under `dir`, recursively, as bytes. */
function filesUnder(dir: string): { file: string; bytes: Buffer }[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => {
      const file = path.join(e.parentPath, e.name);
      return { file, bytes: readFileSync(file) };
    });
}

/** Where each needle still shows: files under DATA_DIR, the log, the API's answer for the run. */
async function leaks(s: Scenario, runId: string, needles: string[]): Promise<string[]> {
  const api = createApi({ app: s.app, applets: s.app.applets, auth: testIdentity(s.app) });
  const answer = await (await api.handle(new Request(`http://localhost:3000/api/runs/${runId}`))).text();
  const found: string[] = [];
  for (const needle of needles) {
    for (const { file, bytes } of filesUnder(s.app.dataDir)) if (bytes.includes(Buffer.from(needle))) found.push(`${needle} in ${path.relative(s.app.dataDir, file)}`);
    if (s.logs.some((l) => l.includes(needle))) found.push(`${needle} in the log`);
    if (answer.includes(needle)) found.push(`${needle} in GET /api/runs/:id`);
  }
  return found;
}

const stepOf = async (s: Scenario, runId: string) => (await s.app.store.runs.get(runId))!.steps.at(-1)!;

describe("one redactor for everything a run stores or logs", () => {
  test("a whole-URL secret is redacted in the http action's error in its normalised form (case, default port, /a/../, backslashes)", async () => {
    const SECRET = "http://Hooks.EXAMPLE.test:80/a/../hook\\in?token=tok-9f8e7d6c5b4a";
    const normalised = "http://hooks.example.test/hook/in?token=tok-9f8e7d6c5b4a";
    expect(new URL(SECRET).href).toBe(normalised);
    server.use(http.post(normalised.split("?")[0]!, () => HttpResponse.error()));
    const s = await scenario({ HOOK: SECRET });
    const runId = await s.run({ actions: [{ type: "http", config: { url: "{{secrets.HOOK}}", body: "{}" } }] });
    const run = (await s.app.store.runs.get(runId))!;
    expect(run.status).toBe("queued"); // a network error: retried later
    expect((await stepOf(s, runId)).error).toMatch(/^net: .* for \[redacted\]$/);
    expect(await leaks(s, runId, [SECRET, normalised, "hooks.example.test/hook", "tok-9f8e7d6c5b4a"])).toEqual([]);
  });

  test("Slack and Discord webhook tokens are redacted when the endpoint's error body echoes the path", async () => {
    const SLACK = "https://hooks.slack.com/services/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";
    const DISCORD = "https://discord.com/api/webhooks/1234567890123456789/abcDEF_ghi-JKLmnoPQRstuVWX";
    server.use(
      http.post(SLACK, () => new HttpResponse("no_service: /services/T0ABC1234/B0XYZ98765/Zq8fE3rT1uV6wX0yA2bC4dG7 is not a known hook", { status: 404 })),
      http.post(DISCORD, () => HttpResponse.json({ message: "Unknown Webhook", code: 10015, path: "/api/webhooks/1234567890123456789/abcDEF_ghi-JKLmnoPQRstuVWX" }, { status: 404 })),
    );
    const s = await scenario({ SLACK, DISCORD });
    const slackRun = await s.run({ actions: [{ type: "slack", config: { webhook_url: "{{secrets.SLACK}}", text: "hi" } }] });
    const discordRun = await s.run({ actions: [{ type: "discord", config: { webhook_url: "{{secrets.DISCORD}}", content: "hi" } }] });
    expect((await s.app.store.runs.get(slackRun))!.status).toBe("failed");
    expect((await s.app.store.runs.get(discordRun))!.status).toBe("failed");
    expect((await stepOf(s, slackRun)).error).toContain("no_service: /services/[redacted]/[redacted]/[redacted] is not a known hook");
    const needles = [SLACK, DISCORD, "T0ABC1234", "B0XYZ98765", "Zq8fE3rT1uV6wX0yA2bC4dG7", "1234567890123456789", "abcDEF_ghi-JKLmnoPQRstuVWX"];
    expect([...(await leaks(s, slackRun, needles)), ...(await leaks(s, discordRun, needles))]).toEqual([]);
  });

  test("the note action's progress path, output and sanitised file name (+ → _) hold no secret, and a refused write's error neither", async () => {
    const SECRET = "Kx+9f8e7d6c5b4a3";
    const s = await scenario({ NAME: SECRET });
    const written = await s.run({ actions: [{ type: "note", config: { filename: "{{secrets.NAME}}.md", content: "note" } }] });
    const step = await stepOf(s, written);
    expect(step.status).toBe("succeeded");
    expect(step.input).toMatchObject({ filename: "[redacted].md" });
    expect((step.progress as { path: string }).path).toMatch(/\[redacted\]\.md$/);
    expect((step.output as { path: string }).path).toMatch(/\[redacted\]\.md$/);
    expect(readdirSync(s.app.config.notesRoot)).toEqual(["Kx_9f8e7d6c5b4a3.md"]);
    // A hard link planted in a folder named by the secret: refused, and the error names the path.
    const folder = path.join(s.app.config.notesRoot, "Kx_9f8e7d6c5b4a3");
    mkdirSync(folder);
    const outside = path.join(makeTempDir("whenthen-outside-"), "victim.txt");
    writeFileSync(outside, "x");
    linkSync(outside, path.join(folder, "log.md"));
    const refused = await s.run({ actions: [{ type: "note", config: { folder: "{{secrets.NAME}}", filename: "log.md", content: "y", mode: "append" } }] });
    expect((await stepOf(s, refused)).error).toMatch(/\[redacted\]\/log\.md" has 2 hard links/);
    expect(await leaks(s, written, [SECRET, "Kx_9f8e7d6c5b4a3", "9f8e7d6c5b4a3"])).toEqual([]);
    expect(await leaks(s, refused, [SECRET, "Kx_9f8e7d6c5b4a3", "9f8e7d6c5b4a3"])).toEqual([]);
  });

  test("the email action's log of to and subject is redacted, and an invalid address is never quoted with its quotes and backslashes stripped", async () => {
    const TO = "ops+9f8e7d6c@example.com";
    const SUBJECT = "tok-77aa88bb99cc";
    // addressparser rewrites this as "ops tok-5566778899q"@bad..example, a form no redaction knew.
    const BAD = 'ops"tok-5566778899\\q@bad..example';
    const s = await scenario({ TO, SUBJECT, BAD });
    const sent = await s.run({ actions: [{ type: "email", config: { to: "{{secrets.TO}}", subject: "Invoice {{secrets.SUBJECT}}", body_markdown: "hi" } }] });
    expect((await s.app.store.runs.get(sent))!.status).toBe("succeeded");
    expect(s.logs.some((l) => l.includes('"email sent"') || l.includes("email sent"))).toBe(true);
    const refused = await s.run({ actions: [{ type: "email", config: { to: "{{secrets.BAD}}", subject: "x", body_markdown: "hi" } }] });
    expect((await s.app.store.runs.get(refused))!.status).toBe("failed");
    expect((await stepOf(s, refused)).error).toBe('the rendered config is invalid: to: email: "to" has an invalid address (entry 1 of 1)');
    // The secret, its parts, and the form an address parser makes of it (quotes, backslash gone).
    const needles = [TO, "9f8e7d6c", SUBJECT, BAD, "tok-5566778899"];
    expect([...(await leaks(s, sent, needles)), ...(await leaks(s, refused, needles))]).toEqual([]);
  });

  test("a crash-requeued note whose path holds a secret still finds what it wrote from the redacted progress, and does not write twice", async () => {
    const SECRET = "Kx+9f8e7d6c5b4a3";
    const notesRoot = makeTempDir("whenthen-notes-");
    const ctx = createActionContext({ env: { NOTES_ROOT: notesRoot } });
    const config = noteConfigSchema.parse({ filename: `${SECRET}.md`, content: "once" });
    await noteAction.run(config, ctx);
    const stored = redact(ctx.savedProgress[0], [SECRET]);
    expect(JSON.stringify(stored)).not.toContain("9f8e7d6c5b4a3");
    const retry = createActionContext({ env: { DATA_DIR: ctx.config.dataDir, NOTES_ROOT: notesRoot }, progress: stored });
    const again = await noteAction.run(config, retry);
    expect(again.output).toMatchObject({ resumed: true });
    expect(readdirSync(notesRoot)).toEqual(["Kx_9f8e7d6c5b4a3.md"]);
    expect(readFileSync(path.join(notesRoot, "Kx_9f8e7d6c5b4a3.md"), "utf8")).toBe("once");
  });

  test("a secret cut short by a quoted message (…) is removed with its cut", () => {
    const r = createRedactor(["sk_live_0123456789abcdef"]);
    expect(r.redact('bad value "xx sk_live_01234…"')).toBe('bad value "xx [redacted]…"');
    expect(r.redact("a plain sentence that was cut…")).toBe("a plain sentence that was cut…");
  });
});
