/**
 * Worst-case webhook bodies (issue #13.5, #13.6): what one costs the lean ingress, and what five
 * of them in flight do to an ordinary webhook's answer, beside the same ordinary load alone (same
 * run, same machine). Before #13 a 100,000-field form took ~1.1 s of the web event loop and five
 * in parallel delayed an ordinary webhook's 202 by 6.6 s.
 *
 * The ingress runs in its own process (bench/servers/ingest.ts, as server.ts mounts it); no
 * worker drains the queue, so only the web side is measured. `pnpm bench webhook-worst`.
 */
import { fork, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import autocannon from "autocannon";
import { createApp } from "@/lib/app";
import { createAppletService } from "@/lib/applets/service";
import { silentLogger } from "@/lib/core/log";
import { LIMITS } from "@/lib/core/limits";
import type { BenchFigure } from "./types";

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..");
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const IN_FLIGHT = 5;
const SAMPLES = 15;

/** The bodies, each under the 1 MB webhook limit, so each is read and parsed. */
function worstBodies(): { name: string; type: string; body: string }[] {
  const bodies = [
    { name: "form, 100,000 fields", type: "application/x-www-form-urlencoded", body: Array.from({ length: 100_000 }, (_, i) => `f${i}=x`).join("&") },
    { name: "JSON object, 100,000 keys", type: "application/json", body: JSON.stringify(Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [i.toString(36), 0]))) },
    // Just under the key bound, with values long enough to fill the megabyte: the most parsing and capping a body can still ask for.
    { name: "JSON object, 9,999 keys of 90-character values", type: "application/json", body: JSON.stringify(Object.fromEntries(Array.from({ length: 9_999 }, (_, i) => [`f${i}`, "v".repeat(90)]))) },
    { name: "JSON nested 10,000 levels", type: "application/json", body: "[".repeat(10_000) + "]".repeat(10_000) },
  ];
  for (const b of bodies) if (Buffer.byteLength(b.body) > LIMITS.webhookBodyBytes) throw new Error(`bench: ${b.name} is over the webhook limit`);
  return bodies;
}

export default async function bench(): Promise<BenchFigure[]> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), "whenthen-bench-worst-"));
  let server: ChildProcess | undefined;
  try {
    const app = createApp({ env: { DATA_DIR: dataDir }, log: silentLogger });
    const applet = await createAppletService(app).create({
      name: "worst case",
      definition: { version: 1, trigger: { type: "webhook", config: {} }, actions: [{ type: "http", config: { url: "https://example.com/in" } }] },
    });
    void app.close();
    // A free port, not a fixed one: other benches on this machine use the 48xx ones.
    const port = await freePort();
    const hook = `http://127.0.0.1:${port}/api/hooks/${applet.id}/${applet.webhookToken}`;
    server = fork(path.join(root, "bench/servers/ingest.ts"), [], {
      env: { ...process.env, DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: "warn", NODE_ENV: "production" },
      execArgv: ["--import", "tsx"],
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    await new Promise<void>((resolve, reject) => {
      server!.once("message", () => resolve());
      server!.once("exit", (code) => reject(new Error(`ingest server exited with ${code}`)));
    });

    const figures: BenchFigure[] = [];
    const bodies = worstBodies();
    for (const b of bodies) {
      const times: number[] = [];
      for (let i = 0; i < SAMPLES; i++) {
        const t = performance.now();
        const res = await fetch(hook, { method: "POST", headers: { "content-type": b.type }, body: b.body });
        if (res.status !== 202) throw new Error(`bench: ${b.name} answered ${res.status}`);
        await res.arrayBuffer();
        times.push(performance.now() - t);
      }
      times.sort((x, y) => x - y);
      figures.push({ name: `worst-case body: ${b.name} (${Math.round(Buffer.byteLength(b.body) / 1024)} KB), time to 202`, unit: "ms", value: times[Math.floor(times.length / 2)]!, notes: `median of ${SAMPLES} sequential requests` });
    }

    const alone = await ordinaryLoad(hook);
    // Five worst-case requests always in flight (each replaced by the next as soon as it is answered).
    const worst = bodies[0]!;
    let stop = false;
    let sent = 0;
    const attackers = Array.from({ length: IN_FLIGHT }, async () => {
      while (!stop) {
        const res = await fetch(hook, { method: "POST", headers: { "content-type": worst.type }, body: worst.body });
        await res.arrayBuffer();
        sent++;
      }
    });
    const attacked = await ordinaryLoad(hook);
    stop = true;
    await Promise.all(attackers);
    figures.push(
      { name: "ordinary webhook, 10 connections, alone: p99", unit: "ms", value: alone.p99, notes: `${alone.rps.toFixed(0)} req/s, p50 ${alone.p50} ms` },
      {
        name: `ordinary webhook, 10 connections, with ${IN_FLIGHT} ${worst.name} requests always in flight: p99`,
        unit: "ms",
        value: attacked.p99,
        target: "<= 1000",
        notes: `${attacked.rps.toFixed(0)} req/s, p50 ${attacked.p50} ms; ${sent} worst-case requests answered meanwhile (before #13: a 6.6 s delay)`,
      },
    );
    return figures;
  } finally {
    if (server && server.exitCode === null) server.kill("SIGTERM");
    await new Promise((r) => setTimeout(r, 300));
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((resolve) => srv.listen(0, "127.0.0.1", resolve));
  const { port } = srv.address() as AddressInfo;
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}

async function ordinaryLoad(url: string) {
  const u = new URL(url);
  const result = await autocannon({
    url: u.origin,
    connections: 10,
    duration: SECONDS,
    requests: [{ method: "POST", path: u.pathname, headers: { "content-type": "application/json" }, body: JSON.stringify({ title: "Order #1042 paid", amount: 59.9 }) }],
  });
  // No answer at all within the run (the old code under attack) must not read as a 0 ms p99.
  const starved = result.requests.total === 0;
  return { rps: result.requests.average, p50: starved ? SECONDS * 1000 : result.latency.p50, p99: starved ? SECONDS * 1000 : result.latency.p99 };
}
