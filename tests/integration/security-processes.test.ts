import { fork, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnWorkerProcess, type WorkerProcess } from "../helpers/processes";

/**
 * What an attacker from outside found that only shows on real processes: a client that half-closes
 * its socket after its request, and respond-with-data templates that blocked the web process's
 * event loop. (The web process is tests/helpers/web-process.ts: the same server, ingress, guard and
 * API as server.ts, without Next's pages; the worker is worker/index.ts.)
 */

let web: ChildProcess;
let worker: WorkerProcess;
let base: string;
let port: number;
let cookie: string;
const dataDir = mkdtempSync(path.join(tmpdir(), "whenthen-hostile-"));

beforeAll(async () => {
  web = fork(path.resolve("tests/helpers/web-process.ts"), [], {
    env: { ...process.env, DATA_DIR: dataDir, PUBLIC_URL: "http://localhost:3000", LOG_LEVEL: "error" },
    execArgv: ["--import", "tsx"],
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  port = await new Promise<number>((resolve, reject) => {
    web.once("message", (m) => resolve((m as { port: number }).port));
    web.once("exit", (code) => reject(new Error(`web process exited with ${code}`)));
  });
  base = `http://127.0.0.1:${port}`;
  const setup = await fetch(`${base}/api/setup`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email: "me@example.com", password: "correct horse battery" }) });
  expect(setup.status).toBe(201);
  cookie = (setup.headers.get("set-cookie") ?? "").split(";")[0]!;
  worker = spawnWorkerProcess({ DATA_DIR: dataDir, PUBLIC_URL: "http://localhost:3000", LOG_LEVEL: "warn" });
}, 60_000);

afterAll(async () => {
  worker.kill();
  await worker.exited;
  web.kill("SIGTERM");
  await new Promise((r) => web.once("exit", r));
  rmSync(dataDir, { recursive: true, force: true });
});

const api = async <T>(method: string, p: string, body?: unknown): Promise<T> => {
  const res = await fetch(`${base}${p}`, { method, headers: { cookie, ...(body === undefined ? {} : { "content-type": "application/json" }) }, body: body === undefined ? undefined : JSON.stringify(body) });
  expect(res.ok, `${method} ${p}: ${res.status}`).toBe(true);
  return (await res.json()) as T;
};

/**
 * Writes `request` on a raw socket and half-closes it at once (FIN after the last byte), as a
 * sender that only reads afterwards; resolves with everything the server wrote before closing.
 */
function halfClosed(request: string): Promise<{ status: number; head: string; body: string }> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    let received = "";
    socket.on("data", (c: Buffer) => (received += c.toString("utf8")));
    socket.on("error", () => {}); // a reset shows as no answer below
    socket.on("close", () => {
      const split = received.indexOf("\r\n\r\n");
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(received)?.[1] ?? 0), head: split < 0 ? received : received.slice(0, split), body: split < 0 ? "" : received.slice(split + 4) });
    });
    socket.once("connect", () => socket.end(request));
  });
}

const post = (p: string, body: string, headers = "") =>
  `POST ${p} HTTP/1.1\r\nHost: localhost:3000\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n${headers}\r\n${body}`;

describe("a client that half-closes its socket after the request still gets its answer", () => {
  it("ten webhooks sent on half-closed sockets each get their 202 with the run id, and exactly ten runs are stored", async () => {
    const { applet } = await api<{ applet: { id: string; webhook_url: string } }>("POST", "/api/applets", {
      name: "half-closed",
      definition: { version: 1, trigger: { type: "webhook", config: {} }, actions: [{ type: "note", config: { filename: "half.md", content: "{{trigger.body.n}}" } }] },
    });
    const hookPath = new URL(applet.webhook_url).pathname;
    const answers = await Promise.all(Array.from({ length: 10 }, (_, n) => halfClosed(post(hookPath, JSON.stringify({ n })))));
    for (const [n, a] of answers.entries()) {
      expect(a.status, `request ${n}: ${a.head || "(no answer)"}`).toBe(202);
      expect(JSON.parse(a.body)).toMatchObject({ run_id: expect.any(String), event_id: expect.any(String) });
    }
    const { runs } = await api<{ runs: { id: string }[] }>("GET", `/api/runs?applet_id=${applet.id}`);
    expect(runs.map((r) => r.id).sort()).toEqual(answers.map((a) => (JSON.parse(a.body) as { run_id: string }).run_id).sort());
  });

  it("a sign-in through the API (its password check runs off the event loop) answers a half-closed socket with its cookie, and so do health and a session read", async () => {
    const login = await halfClosed(post("/api/login", JSON.stringify({ email: "me@example.com", password: "correct horse battery" })));
    expect(login.status, login.head || "(no answer)").toBe(200);
    expect(login.head).toMatch(/^set-cookie: whenthen_session=/im);
    const health = await halfClosed("GET /api/health HTTP/1.1\r\nHost: localhost:3000\r\n\r\n");
    expect([200, 503], health.head || "(no answer)").toContain(health.status);
    const session = await halfClosed(`GET /api/session HTTP/1.1\r\nHost: localhost:3000\r\ncookie: ${cookie}\r\n\r\n`);
    expect(session.status, session.head || "(no answer)").toBe(200);
    expect(session.body).toContain("me@example.com");
  });
});

describe("hostile respond-with-data templates do not block the web process", () => {
  it("/api/health answers in under 200 ms while two 900 KB requests to a template that names their field 500 times render, and each gets a 64 KB answer", async () => {
    const { applet } = await api<{ applet: { webhook_url: string } }>("POST", "/api/applets", {
      name: "respond hostile",
      definition: {
        version: 1,
        trigger: { type: "webhook", config: { respond_wait_seconds: 10, respond_body: "{{trigger.body.a}}".repeat(500), respond_content_type: "text/plain" } },
        actions: [{ type: "note", config: { filename: "respond.md", content: "ok" } }],
      },
    });
    const hookUrl = `${base}${new URL(applet.webhook_url).pathname}`;
    const health = async () => {
      const started = performance.now();
      const res = await fetch(`${base}/api/health`);
      await res.arrayBuffer();
      return performance.now() - started;
    };
    await health(); // the first request pays for opening the connection
    const body = JSON.stringify({ a: "x".repeat(900 * 1024) });
    let inFlight = true;
    const hostile = Promise.all([0, 1].map(() => fetch(hookUrl, { method: "POST", headers: { "content-type": "application/json" }, body }).then(async (r) => ({ status: r.status, bytes: (await r.arrayBuffer()).byteLength })))).finally(() => {
      inFlight = false;
    });
    const latencies: number[] = [];
    while (inFlight) {
      latencies.push(await health());
      // Paced, so the probe does not take the two cores it measures from the processes under test.
      await new Promise((r) => setTimeout(r, 10));
    }
    const answers = await hostile;
    expect(answers).toEqual([
      { status: 200, bytes: 64 * 1024 },
      { status: 200, bytes: 64 * 1024 },
    ]);
    // The requests waited for their runs (a worker turn), so health was asked many times meanwhile.
    expect(latencies.length).toBeGreaterThan(3);
    const slowest = [...latencies].sort((a, b) => b - a).slice(0, 5);
    expect(Math.max(...latencies), `the slowest of ${latencies.length} health answers took ${slowest.map((l) => l.toFixed(0)).join(", ")} ms`).toBeLessThan(200);
  }, 120_000);
});
