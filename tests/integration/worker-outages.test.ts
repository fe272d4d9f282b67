import { fork, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import net, { type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { afterEach, describe, expect, test } from "vitest";
import { alertPolicy } from "@/lib/alerts/policy";
import { openPostgresStore } from "@/lib/db/store/postgres";
import { openSqliteStore } from "@/lib/db/store/sqlite";
import type { Store } from "@/lib/db/store";
import { spawnWorkerProcess, type WorkerProcess } from "../helpers/processes";
import { TEST_POSTGRES_URL, createTestSchema, urlWithSchema, noPostgres } from "../helpers/postgres";

/**
 * Real processes against a database that goes away, and a worker that is killed:
 * - PostgreSQL cut under a web process and two workers (a TCP proxy between them and the server
 *   destroys every connection and refuses new ones for a few seconds, as a server restart does)
 *   while webhooks arrive and runs execute: every acknowledged webhook's run completes, the sink
 *   sees nothing twice beyond the steps in flight at the cut, and no run stays running;
 * - a worker SIGKILLed with a run in flight, on each engine, with the default lease: the applet's
 *   next run finishes within 10 s of the kill (its death is seen directly, not by the lease).
 */
const KEY = Buffer.alloc(32, 7).toString("base64");
const SESSION = "outage-session-secret";
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface Sink {
  url: string;
  /** The `n` of every request, in arrival order. */
  ns: string[];
  /** Arrival times (Date.now()) by `n`. */
  at: Map<string, number>;
}

async function startSink(delayMs: number): Promise<Sink> {
  const ns: string[] = [];
  const at = new Map<string, number>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const n = String((JSON.parse(Buffer.concat(chunks).toString("utf8")) as { n: unknown }).n);
      ns.push(n);
      at.set(n, Date.now());
      setTimeout(() => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end('{"ok":true}');
      }, delayMs);
    });
  });
  server.keepAliveTimeout = 1;
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  cleanups.push(() => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, ns, at };
}

/** A TCP proxy in front of PostgreSQL that can cut every connection and refuse new ones for a while. */
async function startProxy(target: { host: string; port: number }) {
  const sockets = new Set<net.Socket>();
  let server: net.Server;
  let port = 0;
  const listen = () =>
    new Promise<void>((resolve) => {
      server = net.createServer((client) => {
        const upstream = net.connect(target.port, target.host);
        sockets.add(client).add(upstream);
        const drop = () => {
          client.destroy();
          upstream.destroy();
          sockets.delete(client);
          sockets.delete(upstream);
        };
        client.on("error", drop).on("close", drop);
        upstream.on("error", drop).on("close", drop);
        client.pipe(upstream).pipe(client);
      });
      server.listen(port, "127.0.0.1", () => {
        port = (server.address() as AddressInfo).port;
        resolve();
      });
    });
  await listen();
  const close = () => new Promise<void>((r) => server.close(() => r()));
  cleanups.push(async () => {
    for (const s of sockets) s.destroy();
    await close().catch(() => undefined);
  });
  return {
    port,
    /** Every connection destroyed and new ones refused for `ms`, then accepted again. */
    async cut(ms: number) {
      const closing = close();
      for (const s of sockets) s.destroy();
      sockets.clear();
      await closing;
      await new Promise((r) => setTimeout(r, ms));
      await listen();
    },
  };
}

async function startWeb(env: Record<string, string>): Promise<{ base: string; child: ChildProcess }> {
  const child = fork(path.resolve("tests/helpers/web-process.ts"), [], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, NODE_ENV: "test", SECRETS_KEY: KEY, SESSION_SECRET: SESSION, PUBLIC_URL: "http://localhost:3000", LOG_LEVEL: "error", ...env },
    execArgv: ["--import", "tsx"],
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  cleanups.push(() => void child.kill("SIGKILL"));
  const port = await new Promise<number>((resolve, reject) => {
    child.once("message", (m) => resolve((m as { port: number }).port));
    child.once("exit", (code) => reject(new Error(`web process exited with ${code}`)));
  });
  return { base: `http://127.0.0.1:${port}`, child };
}

function startWorker(env: Record<string, string>): WorkerProcess {
  const w = spawnWorkerProcess({ SECRETS_KEY: KEY, SESSION_SECRET: SESSION, ALLOW_PRIVATE_URLS: "true", INBOUND_EMAIL: "false", LOG_LEVEL: "warn", ...env });
  cleanups.push(() => w.kill());
  return w;
}

async function insertApplet(store: Store, id: string, sinkUrl: string) {
  await store.applets.insert({
    id,
    name: id,
    enabled: true,
    triggerType: "webhook",
    definition: {
      version: 1,
      trigger: { type: "webhook", config: {} },
      actions: [{ type: "http", config: { url: sinkUrl, method: "POST", body: { n: "{{trigger.body.n}}" } } }],
    },
    webhookToken: `token-${id}-0123456789abcdef0123456789`,
    now: new Date().toISOString(),
  });
}

describe.skipIf(noPostgres)(`PostgreSQL cut under running processes${noPostgres ? ` (${noPostgres})` : ""}`, () => {
  test("a cut of every connection mid-burst: every acknowledged run completes, nothing sent twice beyond the steps in flight, nothing left running", async () => {
    const { schema, drop } = await createTestSchema("outage");
    cleanups.push(drop);
    const direct = openPostgresStore({ url: TEST_POSTGRES_URL, schema, poolSize: 2, keys: { secretsKey: Buffer.from(KEY, "base64"), sessionSecret: SESSION }, alertPolicy });
    cleanups.push(() => direct.close());
    await direct.ready();
    const sink = await startSink(40);
    const applets = ["a0", "a1", "a2", "a3"];
    for (const id of applets) await insertApplet(direct, id, sink.url);
    const target = new URL(TEST_POSTGRES_URL);
    const proxy = await startProxy({ host: target.hostname, port: Number(target.port || 5432) });
    const viaProxy = new URL(TEST_POSTGRES_URL);
    viaProxy.hostname = "127.0.0.1";
    viaProxy.port = String(proxy.port);
    const url = urlWithSchema(schema, viaProxy.toString());
    const dataDir = mkdtempSync(path.join(tmpdir(), "whenthen-outage-"));
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
    const web = await startWeb({ DATA_DIR: path.join(dataDir, "web"), DATABASE_URL: url, DATABASE_POOL_SIZE: "3" });
    const workers = [0, 1].map((i) => startWorker({ DATA_DIR: path.join(dataDir, `w${i}`), DATABASE_URL: url, DATABASE_POOL_SIZE: "3", WORKER_CONCURRENCY: "4" }));

    const acknowledged: string[] = [];
    const refused: number[] = [];
    let n = 0;
    const send = async () => {
      const i = n++;
      const applet = applets[i % applets.length]!;
      try {
        const res = await fetch(`${web.base}/api/hooks/${applet}/token-${applet}-0123456789abcdef0123456789`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ n: i }),
        });
        if (res.status < 300) acknowledged.push(String(i));
        else refused.push(res.status);
        await res.arrayBuffer();
      } catch {
        refused.push(0);
      }
    };
    const burst = async (count: number) => {
      for (let k = 0; k < count; k += 8) await Promise.all(Array.from({ length: 8 }, send));
    };
    await burst(160);
    const started = Date.now() + 30_000;
    while (sink.ns.length < 20 && Date.now() < started) await new Promise((r) => setTimeout(r, 20));
    // Runs are executing (the sink holds each request 40 ms): cut now, for 3 s, while webhooks go on.
    const beforeCut = sink.ns.length;
    const cutting = proxy.cut(3_000);
    await burst(80);
    await cutting;
    const backAt = Date.now();
    await burst(80);
    expect(beforeCut, "runs were executing when the cut came").toBeGreaterThan(0);

    // Every acknowledged run succeeds after the server is back. The wait is generous: the four
    // applets run one run each at a time (40 ms at the sink), so 240 runs take ~3 s on a quiet
    // machine and ~15 s beside a CI run's other test files; a lost or stranded run never ends.
    const deadline = backAt + 60_000;
    for (;;) {
      const r = await direct.pool.query<{ done: number; running: number }>(
        "SELECT COUNT(*) FILTER (WHERE status = 'succeeded')::int AS done, COUNT(*) FILTER (WHERE status IN ('running', 'queued'))::int AS running FROM runs",
      );
      if (r.rows[0]!.done >= acknowledged.length && r.rows[0]!.running === 0) break;
      if (Date.now() > deadline) break;
      await new Promise((res) => setTimeout(res, 250));
    }
    const rows = (await direct.pool.query<{ status: string; n: string; error: string | null }>("SELECT r.status, e.payload->'body'->>'n' AS n, r.error FROM runs r JOIN events e ON e.id = r.event_id")).rows;
    const notDone = rows.filter((r) => r.status !== "succeeded");
    expect(notDone, `runs not succeeded ${(Date.now() - backAt) / 1000} s after the server came back`).toEqual([]);
    const stored = new Set(rows.map((r) => r.n));
    expect(acknowledged.filter((x) => !stored.has(x)), "acknowledged webhooks without a stored run").toEqual([]);
    // Each run reached the sink; what arrived twice is at most what was in flight at the cut
    // (2 workers x 4 slots), never a run that had finished.
    const seen = new Set(sink.ns);
    expect(acknowledged.filter((x) => !seen.has(x)), "acknowledged runs the sink never saw").toEqual([]);
    const twice = sink.ns.length - seen.size;
    expect(twice, "requests the sink saw twice").toBeLessThanOrEqual(8);
    expect(refused.length, "some webhooks arrived during the cut and were refused (503)").toBeGreaterThan(0);
    // No worker gave up: both still run.
    for (const w of workers) expect(w.child.exitCode, "a worker exited").toBeNull();
  }, 150_000);
});

/** The engines for the SIGKILL test: each gives a store to set up with and the workers' env. */
const engines: { name: string; skip: string | null; open(dataDir: string): Promise<{ store: Store; env: Record<string, string>; close(): Promise<void> }> }[] = [
  {
    name: "sqlite",
    skip: null,
    open: async (dataDir) => {
      const store = openSqliteStore({ file: path.join(dataDir, "app.db"), alertPolicy });
      return { store, env: { DATABASE_URL: `file:${path.join(dataDir, "app.db")}` }, close: () => store.close() };
    },
  },
  {
    name: "postgres",
    skip: noPostgres,
    open: async () => {
      const { schema, drop } = await createTestSchema("kill");
      const store = openPostgresStore({ url: TEST_POSTGRES_URL, schema, poolSize: 2, keys: { secretsKey: Buffer.from(KEY, "base64"), sessionSecret: SESSION }, alertPolicy });
      await store.ready();
      return {
        store,
        env: { DATABASE_URL: urlWithSchema(schema), DATABASE_POOL_SIZE: "3" },
        close: async () => {
          await store.close();
          await drop();
        },
      };
    },
  },
];

for (const engine of engines) {
  describe.skipIf(engine.skip !== null)(`${engine.name}: a worker SIGKILLed with a run in flight${engine.skip ? ` (${engine.skip})` : ""}`, () => {
    test("with the default lease, the applet's next run finishes within 10 s of the kill", async () => {
      const dataDir = mkdtempSync(path.join(tmpdir(), "whenthen-kill-"));
      cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
      const { store, env, close } = await engine.open(dataDir);
      cleanups.push(close);
      // Each request held 300 ms: the kill lands while a run is executing.
      const sink = await startSink(300);
      await insertApplet(store, "inorder", sink.url);
      const workers = [0, 1].map(() => startWorker({ DATA_DIR: dataDir, ...env, WORKER_CONCURRENCY: "2", LOG_LEVEL: "info" }));
      const items = Array.from({ length: 40 }, (_, n) => ({
        appletId: "inorder",
        source: "webhook",
        dedupeKey: null,
        payloadJson: JSON.stringify({ body: { n } }),
        receivedAt: new Date(Date.now() + n).toISOString(),
        maxAttempts: 5,
      }));
      await store.runs.ingestMany(items);
      const until = Date.now() + 30_000;
      while (sink.ns.length < 4 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
      // The worker holding the applet's running run is the one killed.
      let holder: string | null = null;
      while (!holder && Date.now() < until) {
        holder = (await store.runs.list({ appletId: "inorder", status: "running", limit: 1 })).runs[0]?.lockedBy ?? null;
        if (!holder) await new Promise((r) => setTimeout(r, 10));
      }
      expect(holder).not.toBeNull();
      const victim = workers.find((w) => holder!.includes(`:${w.child.pid}:`))!;
      expect(victim).toBeDefined();
      const killedAt = Date.now();
      const sentBefore = sink.ns.length;
      victim.child.kill("SIGKILL");
      await victim.exited;
      // The next run of the applet (the one in flight, run again, or the one after it) finishes.
      const deadline = killedAt + 20_000;
      let finishedAt: number | null = null;
      while (finishedAt === null && Date.now() < deadline) {
        const r = await store.runs.list({ appletId: "inorder", status: "succeeded", limit: 50 });
        const after = r.runs.map((x) => Date.parse(x.finishedAt ?? "")).filter((t) => t > killedAt);
        if (after.length > 0) finishedAt = Math.min(...after);
        else await new Promise((res) => setTimeout(res, 50));
      }
      expect(finishedAt, "no run of the applet finished within 20 s of the kill").not.toBeNull();
      expect(finishedAt! - killedAt, `the applet's next run finished ${finishedAt! - killedAt} ms after the kill`).toBeLessThanOrEqual(10_000);
      expect(sink.ns.length).toBeGreaterThan(sentBefore);
    }, 90_000);
  });
}

describe.skipIf(noPostgres)(`a PostgreSQL that refuses connections at start${noPostgres ? ` (${noPostgres})` : ""}`, () => {
  test("nothing listening on the port: the worker says so in one line per attempt, waits with back-off, and starts when the server answers", async () => {
    const { schema, drop } = await createTestSchema("refuse");
    cleanups.push(drop);
    const dataDir = mkdtempSync(path.join(tmpdir(), "whenthen-refuse-"));
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
    // A port with nothing on it, until the proxy opens there.
    const probe = net.createServer();
    await new Promise<void>((r) => probe.listen(0, "127.0.0.1", r));
    const port = (probe.address() as AddressInfo).port;
    await new Promise<void>((r) => probe.close(() => r()));
    const closed = new URL(TEST_POSTGRES_URL);
    closed.hostname = "127.0.0.1";
    closed.port = String(port);
    const w = startWorker({ DATA_DIR: dataDir, DATABASE_URL: urlWithSchema(schema, closed.toString()), LOG_LEVEL: "info" });
    const first = await w.waitFor(/cannot use 127\.0\.0\.1:\d+\/test/, 20_000);
    expect(first).toMatch(/ECONNREFUSED/);
    expect(first).toMatch(/is PostgreSQL running/);
    expect(first).toMatch(/trying again in 1 s/);
    expect(first).not.toContain("\n");
    await w.waitFor(/trying again in 2 s/, 10_000);
    expect(w.child.exitCode).toBeNull();
    // The server comes up on that port: the worker starts without a restart.
    const target = new URL(TEST_POSTGRES_URL);
    const open = new Set<net.Socket>();
    const server = net.createServer((client) => {
      const upstream = net.connect(Number(target.port || 5432), target.hostname);
      open.add(client).add(upstream);
      client.on("error", () => upstream.destroy()).pipe(upstream).on("error", () => client.destroy()).pipe(client);
    });
    await new Promise<void>((r) => server.listen(port, "127.0.0.1", r));
    cleanups.push(
      () =>
        new Promise<void>((r) => {
          server.close(() => r());
          for (const s of open) s.destroy();
        }),
    );
    await w.waitFor(/the database answers now; starting/, 30_000);
    expect(w.child.exitCode).toBeNull();
  }, 60_000);

  test("a login the server refuses: one line naming the user problem, retried, not a crash loop", async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), "whenthen-refuse-"));
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
    const wrong = new URL(TEST_POSTGRES_URL);
    wrong.username = "no_such_user_whenthen";
    const w = startWorker({ DATA_DIR: dataDir, DATABASE_URL: wrong.toString(), LOG_LEVEL: "info" });
    const line = await w.waitFor(/cannot use .*no_such_user_whenthen|cannot use .*refused the login|cannot use .*\(28/, 20_000);
    expect(line).toMatch(/\(28(000|P01)\)/);
    expect(line).toMatch(/trying again in/);
    await w.waitFor(/trying again in 2 s/, 10_000);
    expect(w.child.exitCode).toBeNull();
  }, 60_000);

  test("a server with no connection left for the app: one line saying so, retried, and the worker starts once a connection is free", async () => {
    const { schema, drop } = await createTestSchema("crowded");
    cleanups.push(drop);
    const dataDir = mkdtempSync(path.join(tmpdir(), "whenthen-refuse-"));
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
    // A login of its own limited to one connection, which another client holds: the server answers
    // the worker 53300 ("too many connections for role"), as a full max_connections would.
    const role = `whenthen_crowded_${process.pid}`;
    const admin = new pg.Client({ connectionString: TEST_POSTGRES_URL });
    await admin.connect();
    await admin.query(`DROP ROLE IF EXISTS ${role}`);
    await admin.query(`CREATE ROLE ${role} LOGIN CONNECTION LIMIT 1`);
    await admin.query(`GRANT ALL ON SCHEMA ${schema} TO ${role}`);
    cleanups.push(async () => {
      await admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1`, [role]);
      await admin.query(`DROP OWNED BY ${role}`);
      await admin.query(`DROP ROLE IF EXISTS ${role}`);
      await admin.end();
    });
    const asRole = new URL(TEST_POSTGRES_URL);
    asRole.username = role;
    const holder = new pg.Client({ connectionString: asRole.toString() });
    await holder.connect();
    const w = startWorker({ DATA_DIR: dataDir, DATABASE_URL: urlWithSchema(schema, asRole.toString()), LOG_LEVEL: "info", DATABASE_POOL_SIZE: "1" });
    const line = await w.waitFor(/cannot use .*\(53300\)/, 20_000);
    expect(line).toMatch(/too many clients: raise its max_connections or lower DATABASE_POOL_SIZE/);
    expect(line).toMatch(/trying again in/);
    expect(line).not.toContain("\n");
    expect(w.child.exitCode).toBeNull();
    // The connection is given back, and the limit raised for the worker's liveness session: it starts by itself.
    await holder.end();
    await admin.query(`ALTER ROLE ${role} CONNECTION LIMIT 5`);
    await w.waitFor(/the database answers now; starting/, 40_000);
    expect(w.child.exitCode).toBeNull();
  }, 90_000);
});
