import { mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { alertPolicy } from "@/lib/alerts/policy";
import { openPostgresStore, type PostgresStore } from "@/lib/db/store/postgres";
import { waitLinks } from "@/lib/waits/links";
import { forkWebProcess, spawnWorkerProcess, type WebProcess, type WorkerProcess } from "../helpers/processes";
import { TEST_POSTGRES_URL, createTestSchema, urlWithSchema, noPostgres } from "../helpers/postgres";

/**
 * Wait steps at scale, with the processes production runs: two web hosts and four workers on one
 * PostgreSQL database. 1,000 runs park on a wait (500 waiting for a call to their resume URL, 500
 * on a delay), then all are resumed at once: the 500 calls POSTed concurrently, split across both
 * web hosts, with 100 of the URLs POSTed a second time to the other host in the same burst, while
 * the 500 delays come due at the same moment (the four workers' ticks race for them). Every run
 * resumes once and succeeds; the sink behind the step after the wait sees each run exactly once;
 * each duplicate POST is answered 409 already_used and changes nothing.
 */
const KEY = Buffer.alloc(32, 5).toString("base64");
const SESSION_SECRET = "session-secret-shared-by-every-host-of-this-test";
const PUBLIC_URL = "http://whenthen.test";
const CALLS = 500;
const DELAYS = 500;
const DUPLICATES = 100;
// The queue runs one run of an applet at a time; the runs are spread over 20 applets of the same
// two shapes so that the four workers' 16 slots have work side by side.
const APPLETS_PER_KIND = 10;
const WORKERS = 4;

const cleanups: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface Sink {
  url: string;
  /** Requests per run id. */
  perRun: Map<string, number>;
  bodies: Record<string, unknown>[];
  close(): Promise<void>;
}

async function startSink(): Promise<Sink> {
  const perRun = new Map<string, number>();
  const bodies: Record<string, unknown>[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as Record<string, unknown>;
      bodies.push(body);
      perRun.set(String(body.run), (perRun.get(String(body.run)) ?? 0) + 1);
      res.writeHead(200, { "content-type": "application/json" });
      res.end('{"ok":true}');
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/after-wait`,
    perRun,
    bodies,
    close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
  };
}

const definition = (sinkUrl: string, wait: Record<string, unknown>, body: Record<string, unknown>) => ({
  version: 2,
  trigger: { type: "webhook", config: {} },
  steps: [
    { id: "pause", type: "wait", ...wait },
    { id: "after", type: "http", config: { url: sinkUrl, method: "POST", body: { run: "{{run.id}}", ...body } } },
  ],
});

/** Runs by status, of the applets whose id starts with `prefix`. */
async function counts(store: PostgresStore, prefix: string): Promise<Record<string, number>> {
  const rows = (await store.pool.query<{ status: string; n: number }>("SELECT status, COUNT(*)::int AS n FROM runs WHERE applet_id LIKE $1 GROUP BY status", [`${prefix}%`])).rows;
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

async function until(store: PostgresStore, prefix: string, what: string, done: (c: Record<string, number>) => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const c = await counts(store, prefix);
    if (done(c)) return;
    if ((c.failed ?? 0) + (c.dead ?? 0) > 0) throw new Error(`runs failed while waiting for ${what}: ${JSON.stringify(c)}`);
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(c)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe.skipIf(noPostgres)(`waiting runs on two web hosts and four workers, PostgreSQL${noPostgres ? ` (${noPostgres})` : ""}`, () => {
  let url: string;
  let root: string;
  let sink: Sink;
  let store: PostgresStore;
  let schema: string;
  let drop: () => Promise<void>;
  const webs: WebProcess[] = [];
  const workers: WorkerProcess[] = [];

  beforeAll(async () => {
    ({ schema, drop } = await createTestSchema("waitsprocs"));
    cleanups.push(() => drop());
    url = urlWithSchema(schema);
    root = mkdtempSync(path.join(tmpdir(), "whenthen-pgwaits-"));
    cleanups.push(() => rmSync(root, { recursive: true, force: true }));
    sink = await startSink();
    cleanups.push(() => sink.close());
    // Migrated here with the hosts' keys, so that every process finds the database initialised and
    // all six can start at once.
    store = openPostgresStore({ url: TEST_POSTGRES_URL, schema, poolSize: 4, keys: { secretsKey: Buffer.from(KEY, "base64"), sessionSecret: SESSION_SECRET }, alertPolicy });
    cleanups.push(() => store.close());
    await store.ready();

    const hostEnv = { DATABASE_URL: url, DATABASE_POOL_SIZE: "3", SECRETS_KEY: KEY, SESSION_SECRET, PUBLIC_URL };
    const started = Promise.all([
      ...["web-a", "web-b"].map(async (name) => {
        const web = await forkWebProcess({ ...hostEnv, DATA_DIR: path.join(root, name) });
        cleanups.push(() => web.stop());
        webs.push(web);
      }),
    ]);
    for (let i = 0; i < WORKERS; i++) {
      const w = spawnWorkerProcess({ ...hostEnv, DATA_DIR: path.join(root, `worker-${i}`), ALLOW_PRIVATE_URLS: "true", INBOUND_EMAIL: "false", WORKER_CONCURRENCY: "4", LOG_LEVEL: "warn" });
      cleanups.push(() => w.kill());
      workers.push(w);
    }
    await started;
  }, 120_000);

  test("1,000 waiting runs resumed at once (500 calls across both hosts with duplicates, 500 delays due together): each resumes once, the step after runs once", async () => {
    const now = new Date().toISOString();
    const callApplets: string[] = [];
    const delayApplets: string[] = [];
    for (let i = 0; i < APPLETS_PER_KIND; i++) {
      for (const [kind, list, def] of [
        ["call", callApplets, definition(sink.url, { kind: "for_call" }, { kind: "call", call: "{{steps.pause.output.call}}" })],
        ["delay", delayApplets, definition(sink.url, { kind: "delay", duration: "1h" }, { kind: "delay" })],
      ] as const) {
        const id = `${kind}-${String(i).padStart(2, "0")}`;
        await store.applets.insert({ id, name: id, enabled: true, triggerType: "webhook", definition: def, webhookToken: `token-${id}-0123456789abcdef0123456789`, now });
        list.push(id);
      }
    }
    const items = [
      ...Array.from({ length: CALLS }, (_, n) => ({ appletId: callApplets[n % APPLETS_PER_KIND]!, n })),
      ...Array.from({ length: DELAYS }, (_, n) => ({ appletId: delayApplets[n % APPLETS_PER_KIND]!, n })),
    ].map(({ appletId, n }) => ({ appletId, source: "webhook", dedupeKey: null, payloadJson: JSON.stringify({ body: { n } }), receivedAt: now, maxAttempts: 5 }));
    for (let i = 0; i < items.length; i += 250) await store.runs.ingestMany(items.slice(i, i + 250));

    // The workers take every run to its wait and let go of it.
    await until(store, "", "1,000 waiting runs", (c) => c.waiting === CALLS + DELAYS, 60_000);
    const held = (await store.pool.query<{ n: number }>("SELECT COUNT(*)::int AS n FROM runs WHERE locked_by IS NOT NULL OR claim_token IS NOT NULL")).rows[0]!.n;
    expect(held).toBe(0);
    expect(await store.waits.countWaiting()).toEqual({ for_call: CALLS, delay: DELAYS });
    expect(sink.perRun.size).toBe(0);

    const runs = (await store.pool.query<{ id: string; applet_id: string }>("SELECT id, applet_id FROM runs ORDER BY id")).rows;
    const callRuns = runs.filter((r) => r.applet_id.startsWith("call-")).map((r) => r.id);
    const delayRuns = runs.filter((r) => r.applet_id.startsWith("delay-")).map((r) => r.id);
    expect(callRuns).toHaveLength(CALLS);
    expect(delayRuns).toHaveLength(DELAYS);

    // All at once. The processes run on the system clock, and the tick reads nothing but a wait's
    // resume_at: moving the 500 delays' resume_at to now is their hour having passed, at one moment.
    // The 500 calls go half to each host, and 100 of them a second time to the other host, in the
    // same burst; each POST's body says which POST it was.
    type Sent = { runId: string; post: number; status: number; body: { status?: string; resolution?: string } };
    const posts: { runId: string; post: number; host: WebProcess }[] = [];
    callRuns.forEach((runId, i) => posts.push({ runId, post: posts.length, host: webs[i % 2]! }));
    callRuns.slice(0, DUPLICATES).forEach((runId, i) => posts.push({ runId, post: posts.length, host: webs[(i + 1) % 2]! }));
    const resumeUrl = (runId: string, host: WebProcess) => waitLinks(PUBLIC_URL, SESSION_SECRET, runId, 0).resume_url.replace(PUBLIC_URL, host.base);
    // The delays come due now (the processes run on the real clock; no store method moves a wait's time).
    const [, sent] = await Promise.all([
      store.pool.query("UPDATE run_waits SET resume_at = $1 WHERE kind = 'delay'", [new Date().toISOString()]),
      Promise.all(
        posts.map(async (p): Promise<Sent> => {
          const res = await fetch(resumeUrl(p.runId, p.host), { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ call: `post-${p.post}` }) });
          return { runId: p.runId, post: p.post, status: res.status, body: (await res.json()) as Sent["body"] };
        }),
      ),
    ]);

    // Per resume URL: exactly one POST resumed the run (202), any other was told it was already used.
    const accepted = new Map<string, number>();
    for (const s of sent) {
      if (s.status === 202) {
        expect(accepted.has(s.runId), `${s.runId} resumed by two POSTs`).toBe(false);
        accepted.set(s.runId, s.post);
      } else {
        expect({ status: s.status, code: s.body.status, resolution: s.body.resolution }).toEqual({ status: 409, code: "already_used", resolution: "called" });
      }
    }
    expect(accepted.size).toBe(CALLS);
    expect(sent.filter((s) => s.status === 409)).toHaveLength(DUPLICATES);

    await until(store, "", "1,000 runs to succeed", (c) => c.succeeded === CALLS + DELAYS, 60_000);
    // A tick of every worker comes by (each sweeps every second): nothing is resumed a second time.
    await new Promise((r) => setTimeout(r, 2_000));
    // Duplicates after the end are refused too.
    const late = await fetch(resumeUrl(callRuns[0]!, webs[1]!), { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ call: "late" }) });
    expect(late.status).toBe(409);
    expect(((await late.json()) as { status: string }).status).toBe("already_used");

    // The step after the wait reached the sink exactly once per run.
    expect(sink.bodies).toHaveLength(CALLS + DELAYS);
    expect([...sink.perRun.entries()].filter(([, n]) => n !== 1)).toEqual([]);
    expect(new Set(sink.perRun.keys())).toEqual(new Set([...callRuns, ...delayRuns]));
    // A call run carried on with the body of the POST that resumed it, never a duplicate's.
    for (const b of sink.bodies.filter((x) => x.kind === "call")) expect(b.call).toBe(`post-${accepted.get(String(b.run))}`);

    // The store's side: each wait resolved once, as what ended it; each run passed its wait once.
    const waits = (await store.pool.query<{ run_id: string; resolution: string; resolved_by: string; output: string | null; n: number }>(
      "SELECT run_id, resolution, resolved_by, output, (SELECT COUNT(*)::int FROM run_waits x WHERE x.run_id = w.run_id) AS n FROM run_waits w",
    )).rows;
    expect(waits).toHaveLength(CALLS + DELAYS);
    expect(waits.filter((w) => w.n !== 1)).toEqual([]);
    for (const w of waits) {
      if (delayRuns.includes(w.run_id)) expect({ resolution: w.resolution, by: w.resolved_by }).toEqual({ resolution: "time", by: "clock" });
      else expect({ resolution: w.resolution, output: JSON.parse(w.output!) as unknown }).toEqual({ resolution: "called", output: { call: `post-${accepted.get(w.run_id)}` } });
    }
    const steps = (await store.pool.query<{ id: string; steps: { kind: string; id: string; status: string; rerun?: boolean }[] }>("SELECT id, steps FROM runs")).rows;
    for (const r of steps) {
      expect(r.steps.map((s) => `${s.id}:${s.status}`), r.id).toEqual(["pause:succeeded", "after:succeeded"]);
      expect(r.steps.some((s) => s.rerun), r.id).toBe(false);
    }
    // lib/core/log writes "<time> ERROR [scope] message": no worker logged one.
    expect(workers.flatMap((w) => w.lines.filter((l) => /^\S+ ERROR /.test(l)))).toEqual([]);
  }, 150_000);

  test("calls that come while the runs are being parked (before, during and after each run's park) are each taken once: none is refused, every run resumes once", async () => {
    const RUNS = 200;
    const now = new Date().toISOString();
    const applets = Array.from({ length: APPLETS_PER_KIND }, (_, i) => `early-${String(i).padStart(2, "0")}`);
    for (const id of applets) {
      await store.applets.insert({ id, name: id, enabled: true, triggerType: "webhook", definition: definition(sink.url, { kind: "for_call" }, { kind: "early", call: "{{steps.pause.output.call}}" }), webhookToken: `token-${id}-0123456789abcdef0123456789`, now });
    }
    const items = Array.from({ length: RUNS }, (_, n) => ({ appletId: applets[n % applets.length]!, source: "webhook", dedupeKey: null, payloadJson: JSON.stringify({ body: { n } }), receivedAt: now, maxAttempts: 5 }));
    // Each run's call is sent the moment the run is seen running: a run whose wait is its first
    // step spends its running time parking, so the calls land before, inside and after the parks'
    // transactions. A run never seen running is called once it waits.
    const called = new Map<string, Promise<{ status: number; body: unknown }>>();
    const call = (runId: string) => {
      if (called.has(runId)) return;
      const host = webs[called.size % 2]!;
      const url = waitLinks(PUBLIC_URL, SESSION_SECRET, runId, 0).resume_url.replace(PUBLIC_URL, host.base);
      called.set(runId, fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ call: runId }) }).then(async (res) => ({ status: res.status, body: await res.json() })));
    };
    for (let i = 0; i < items.length; i += 100) await store.runs.ingestMany(items.slice(i, i + 100));
    const deadline = Date.now() + 60_000;
    while (called.size < RUNS) {
      if (Date.now() > deadline) throw new Error(`only ${called.size} of ${RUNS} runs were seen running or waiting`);
      const rows = (await store.pool.query<{ id: string }>("SELECT id FROM runs WHERE applet_id LIKE 'early-%' AND status IN ('running', 'waiting')")).rows;
      for (const r of rows) call(r.id);
      await new Promise((r) => setTimeout(r, 2));
    }
    const answers = await Promise.all([...called.entries()].map(async ([runId, p]) => ({ runId, ...(await p) })));
    // Each call was taken: 202, resumed (or kept for the wait it comes before). Not one refused.
    expect(answers.filter((a) => a.status !== 202)).toEqual([]);

    await until(store, "early-", `${RUNS} runs to succeed`, (c) => c.succeeded === RUNS, 60_000);
    const runIds = [...called.keys()];
    expect(runIds.filter((id) => sink.perRun.get(id) !== 1)).toEqual([]);
    for (const b of sink.bodies.filter((x) => x.kind === "early")) expect(b.call).toBe(b.run);
  }, 120_000);
});
