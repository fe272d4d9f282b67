import { fork, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import nodemailer from "nodemailer";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { spawnWorkerProcess, type WorkerProcess } from "../helpers/processes";
import { createTestSchema, urlWithSchema, noPostgres } from "../helpers/postgres";

/**
 * Two real web processes (tests/helpers/web-process.ts: the ingress, the API and the live
 * feed of server.ts, each its own node) and one worker process on one PostgreSQL database, with a
 * DATA_DIR each, as three hosts would have them. A webhook ingested by web A and executed by the
 * worker shows up on the SSE stream of web B, which saw neither: only the database's NOTIFY can
 * have told it. And an email attachment received by the worker's SMTP receiver is served by web B
 * from the database: the three share nothing but it.
 */
const KEY = Buffer.alloc(32, 7).toString("base64");
const SESSION_SECRET = "shared-session-secret-for-the-two-web-hosts";
const cleanups: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface WebHost {
  base: string;
  child: ChildProcess;
}

async function startWeb(url: string, dataDir: string): Promise<WebHost> {
  const child = fork(path.resolve("tests/helpers/web-process.ts"), [], {
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      NODE_ENV: "test",
      DATA_DIR: dataDir,
      DATABASE_URL: url,
      DATABASE_POOL_SIZE: "3",
      SECRETS_KEY: KEY,
      SESSION_SECRET,
      PUBLIC_URL: "http://localhost:3000",
      LOG_LEVEL: "error",
    },
    execArgv: ["--import", "tsx"],
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.once("message", (m) => resolve((m as { port: number }).port));
    child.once("exit", (code) => reject(new Error(`web process exited with ${code}`)));
  });
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
        setTimeout(() => child.kill("SIGKILL"), 5_000).unref();
      }),
  );
  return { base: `http://127.0.0.1:${port}`, child };
}

/** One open GET /api/stream: every message it delivered, and a way to wait for one. */
function openStream(base: string, token: string) {
  const messages: { event: string; data: { run_id: string; applet_id: string; status: string } }[] = [];
  const abort = new AbortController();
  const waiters = new Set<() => void>();
  const opened = fetch(`${base}/api/stream`, { headers: { authorization: `Bearer ${token}` }, signal: abort.signal }).then(async (res) => {
    expect(res.status).toBe(200);
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let buffered = "";
    const pump = async () => {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buffered += value;
        let end: number;
        while ((end = buffered.indexOf("\n\n")) >= 0) {
          const block = buffered.slice(0, end);
          buffered = buffered.slice(end + 2);
          const event = /^event: (.*)$/m.exec(block)?.[1];
          const data = /^data: (.*)$/m.exec(block)?.[1];
          if (event && data) messages.push({ event, data: JSON.parse(data) as (typeof messages)[number]["data"] });
          for (const w of waiters) w();
        }
      }
    };
    void pump().catch(() => {});
  });
  cleanups.push(() => abort.abort());
  return {
    messages,
    opened,
    async waitFor(match: (m: (typeof messages)[number]) => boolean, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      while (!messages.some(match)) {
        if (Date.now() > deadline) throw new Error(`the stream never delivered the message; it had ${JSON.stringify(messages)}`);
        await new Promise<void>((resolve) => {
          const done = () => (waiters.delete(done), resolve());
          waiters.add(done);
          setTimeout(done, 200);
        });
      }
      return messages.find(match)!;
    },
  };
}

describe.skipIf(noPostgres)(`two web processes and a worker on one PostgreSQL database${noPostgres ? ` (${noPostgres})` : ""}`, () => {
  let a: WebHost;
  let b: WebHost;
  let worker: WorkerProcess;
  let token: string;
  let root: string;
  let smtpPort: number;
  let dbUrl: string;

  beforeAll(async () => {
    const { schema, drop } = await createTestSchema("webs");
    cleanups.push(drop);
    const url = urlWithSchema(schema);
    dbUrl = url;
    root = mkdtempSync(path.join(tmpdir(), "whenthen-pgwebs-"));
    cleanups.push(() => rmSync(root, { recursive: true, force: true }));
    // A first, so that it migrates alone; B then finds the database initialised with the same keys.
    a = await startWeb(url, path.join(root, "web-a"));
    b = await startWeb(url, path.join(root, "web-b"));
    worker = spawnWorkerProcess({
      DATA_DIR: path.join(root, "worker"),
      NOTES_ROOT: path.join(root, "notes"),
      DATABASE_URL: url,
      DATABASE_POOL_SIZE: "3",
      SECRETS_KEY: KEY,
      SESSION_SECRET,
      INBOUND_EMAIL: "true",
      INBOUND_DOMAIN: "hooks.example",
      PUBLIC_URL: "http://localhost:3000",
      LOG_LEVEL: "info",
    });
    cleanups.push(() => worker.kill());
    smtpPort = Number(/"smtp_port":(\d+)/.exec(await worker.waitFor(/worker started/, 60_000))![1]);

    const setup = await fetch(`${a.base}/api/setup`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email: "me@example.com", password: "correct horse battery" }) });
    expect(setup.status).toBe(201);
    const cookie = (setup.headers.get("set-cookie") ?? "").split(";")[0]!;
    token = ((await (await fetch(`${a.base}/api/tokens`, { method: "POST", headers: { "content-type": "application/json", cookie }, body: JSON.stringify({ name: "two hosts" }) })).json()) as { token: string }).token;
  }, 120_000);

  test("a run ingested by web A and executed by the worker shows up on web B's SSE stream until it succeeded", async () => {
    const created = await fetch(`${a.base}/api/applets`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body: JSON.stringify({ name: "Two hosts", definition: { version: 1, trigger: { type: "webhook", config: {} }, actions: [{ type: "note", config: { filename: "hosts.md", content: "{{trigger.body.n}}" } }] } }),
    });
    expect(created.status).toBe(201);
    const { applet } = (await created.json()) as { applet: { id: string; webhook_token: string } };

    // Web B's stream is open before anything happens; web A is the one that ingests.
    const streamB = openStream(b.base, token);
    await streamB.opened;
    // Past the looks a stream's opening makes (at once and a second later): what comes next, only
    // a NOTIFY brings within a second.
    await new Promise((r) => setTimeout(r, 1_500));
    // The worker, idle, says so (drizzle-pg/0017): the webhook's run is announced to it.
    const db = new pg.Client({ connectionString: dbUrl });
    await db.connect();
    try {
      const rows = (await db.query<{ idle: boolean }>("SELECT EXISTS (SELECT 1 FROM queue_watchers q JOIN workers w ON w.id = q.id WHERE q.until > now()) AS idle")).rows;
      expect(rows).toEqual([{ idle: true }]);
    } finally {
      await db.end();
    }
    const hook = await fetch(`${a.base}/api/hooks/${applet.id}/${applet.webhook_token}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ n: 1 }) });
    const accepted = Date.now();
    expect(hook.status).toBe(202);
    const { run_id: runId } = (await hook.json()) as { run_id: string };

    const done = await streamB.waitFor((m) => m.data.run_id === runId && m.data.status === "succeeded");
    const arrived = Date.now();
    expect(done).toEqual({ event: "run.updated", data: { run_id: runId, applet_id: applet.id, status: "succeeded" } });
    // What web B said of the run before its end were earlier states (the feed sends each look's
    // current state, so a run the worker finishes before web B looks arrives as succeeded alone).
    const states = streamB.messages.filter((m) => m.data.run_id === runId).map((m) => m.data.status);
    expect(states.at(-1)).toBe("succeeded");
    for (const s of states.slice(0, -1)) expect(["queued", "running"]).toContain(s);
    // And the run is the one the worker executed: web B reads it as succeeded from the database.
    const { run } = (await (await fetch(`${b.base}/api/runs/${runId}`, { headers: { authorization: `Bearer ${token}` } })).json()) as { run: { status: string; started_at: string; finished_at: string } };
    expect(run.status).toBe("succeeded");
    // Started at once, woken by the announcement, not by the idle worker's look every 5 s.
    expect(Date.parse(run.started_at) - accepted).toBeLessThan(1_000);
    // Within a second or so of the finish (one machine, one clock): announced by NOTIFY because web
    // B's open stream made it a watcher (drizzle-pg/0016), not found by the 10 s safety look.
    expect(arrived - Date.parse(run.finished_at)).toBeLessThan(2_000);
    expect(worker.lines.filter((l) => / ERROR /.test(l))).toEqual([]);
  }, 60_000);

  test("an email attachment received by the worker (its own DATA_DIR) is served by web B through its signed link, from the database", async () => {
    const created = await fetch(`${a.base}/api/applets`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body: JSON.stringify({ name: "Invoices", definition: { version: 1, trigger: { type: "email", config: { to_alias: "invoices" } }, actions: [{ type: "note", config: { filename: "invoices.md", content: "{{trigger.subject}}" } }] } }),
    });
    expect(created.status).toBe(201);
    const { applet } = (await created.json()) as { applet: { id: string } };
    const streamB = openStream(b.base, token);
    await streamB.opened;

    const transport = nodemailer.createTransport({ host: "127.0.0.1", port: smtpPort, secure: false, ignoreTLS: true });
    try {
      await transport.sendMail({ envelope: { from: "ada@example.com", to: ["invoices@hooks.example"] }, raw: readFileSync(path.resolve("fixtures/inbound/with-attachment.eml")) });
    } finally {
      transport.close();
    }
    const done = await streamB.waitFor((m) => m.data.applet_id === applet.id && m.data.status === "succeeded");
    const detail = (await (await fetch(`${b.base}/api/runs/${done.data.run_id}`, { headers: { authorization: `Bearer ${token}` } })).json()) as {
      event: { payload: { attachments: { filename: string; url: string }[] } };
    };
    const [attachment] = detail.event.payload.attachments;
    expect(attachment!.filename).toBe("INV-2026-0042.pdf");
    // The link names PUBLIC_URL (any web host behind it); here it is sent to web B.
    const link = new URL(attachment!.url);
    const file = await fetch(`${b.base}${link.pathname}${link.search}`);
    expect(file.status).toBe(200);
    expect(file.headers.get("content-type")).toBe("application/pdf");
    const bytes = Buffer.from(await file.arrayBuffer());
    expect(bytes.length).toBe(596);
    expect(bytes.subarray(0, 8).toString()).toBe("%PDF-1.4");
    // Nothing of it is on any host's disk.
    for (const host of ["web-a", "web-b", "worker"]) expect(existsSync(path.join(root, host, "files")), host).toBe(false);
  }, 60_000);
});
