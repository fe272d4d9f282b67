/**
 * Issue 19: what real senders need must not cost the ingest. First, a signature check must not cost the ingest. Production processes (`node
 * dist/server.mjs` + `node dist/worker.mjs`, the worker draining), two sets of applets: unsigned,
 * and the GitHub preset (HMAC-SHA256 of the raw body checked, a unique X-GitHub-Delivery per request
 * as its dedupe key). The loads alternate, unsigned/signed twice, so drift in the machine's load
 * falls on both; the figure is the signed rate against the unsigned one of the same run.
 * Then "respond with data": the same unsigned load while 100 other senders each wait for their
 * run's answer (applets with respond_wait_seconds), against the unsigned load alone.
 */
import { createHmac } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import autocannon from "autocannon";
import { createApp } from "@/lib/app";
import { createAppletService } from "@/lib/applets/service";
import { silentLogger } from "@/lib/core/log";
import { freePorts, requireBuild, start, waitHealthy, type Proc } from "./processes";
import type { BenchFigure } from "./types";

const CONNECTIONS = 50;
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const APPLETS = 20;
const SECRET = "bench-signing-secret";
const WAITERS = 100;
const BODY = JSON.stringify({ title: "Order #1042 paid", amount: 59.9, n: 1 });

export default async function bench(): Promise<BenchFigure[]> {
  requireBuild();
  const dataDir = mkdtempSync(path.join(os.tmpdir(), "whenthen-bench-"));
  const procs: Proc[] = [];
  const [sinkPort, webPort, smtpPort] = (await freePorts(3)) as [number, number, number];
  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, ALLOW_PRIVATE_URLS: "true", LOG_LEVEL: "warn", NODE_ENV: "production", NEXT_TELEMETRY_DISABLED: "1" };
  try {
    const sink = start("bench/servers/sink.ts", { ...env, PORT: String(sinkPort) }, { tsx: true });
    procs.push(sink);
    await new Promise<void>((resolve) => sink.child.once("message", () => resolve()));

    const app = createApp({ env: { DATA_DIR: dataDir, ALLOW_PRIVATE_URLS: "true" }, log: silentLogger });
    const service = createAppletService(app);
    const make = (config: Record<string, unknown>) =>
      Array.from({ length: APPLETS }, (_, i) => {
        const a = service.create({
          name: `bench ${JSON.stringify(config)} ${i}`,
          definition: { version: 1, trigger: { type: "webhook", config }, actions: [{ type: "http", config: { url: `http://127.0.0.1:${sinkPort}/in`, method: "POST", body: { title: "{{trigger.body.title}}" } } }] },
        });
        return `/api/hooks/${a.id}/${a.webhookToken}`;
      });
    const unsigned = make({});
    const signed = make({ verify: "github", hmac_secret: SECRET });
    const responding = make({ respond_wait_seconds: 10, respond_body: '{"got":"{{steps[0].output.status}}"}' });
    app.close();

    const appEnv = { ...env, PORT: String(webPort), HOST: "127.0.0.1", SMTP_INBOUND_PORT: String(smtpPort), PUBLIC_URL: `http://127.0.0.1:${webPort}` };
    const worker = start("dist/worker.mjs", appEnv);
    const web = start("dist/server.mjs", appEnv);
    procs.push(worker, web);
    await waitHealthy(`http://127.0.0.1:${webPort}`, [web, worker]);
    await new Promise((r) => setTimeout(r, 2000));

    const base = `http://127.0.0.1:${webPort}`;
    const signature = `sha256=${createHmac("sha256", SECRET).update(BODY).digest("hex")}`;
    const rounds: { unsigned: Load; signed: Load }[] = [];
    for (let i = 0; i < 2; i++) rounds.push({ unsigned: await load(base, unsigned, {}), signed: await load(base, signed, { "x-hub-signature-256": signature }, true) });
    const waitersAlone = await load(base, unsigned, {});
    const [withWaiters, waiters] = await Promise.all([load(base, unsigned, {}), load(base, responding, {}, false, WAITERS)]);
    const sum = (k: "unsigned" | "signed") => rounds.reduce((s, r) => s + r[k].rps, 0) / rounds.length;
    const bad = rounds.reduce((s, r) => s + r.signed.non2xx, 0);
    return [
      { name: "unsigned webhook ingest, 50 connections, worker draining (mean of 2 rounds)", unit: "req/s", value: sum("unsigned"), notes: rounds.map((r) => `p99 ${r.unsigned.p99} ms`).join(", ") },
      { name: "GitHub preset (HMAC check + X-GitHub-Delivery dedupe key), same run", unit: "req/s", value: sum("signed"), notes: `${rounds.map((r) => `p99 ${r.signed.p99} ms`).join(", ")}; ${bad} answers not 202` },
      { name: "signed vs unsigned ingest", unit: "%", value: (sum("signed") / sum("unsigned")) * 100, target: ">= 90" },
      { name: `unsigned ingest while ${WAITERS} senders wait for their run's answer`, unit: "req/s", value: withWaiters.rps, notes: `alone just before: ${Math.round(waitersAlone.rps)} req/s (${Math.round((withWaiters.rps / waitersAlone.rps) * 100)} %); p99 ${withWaiters.p99} ms vs ${waitersAlone.p99} ms; the waiting senders got ${Math.round(waiters.rps)} answers/s, p99 ${waiters.p99} ms, ${waiters.non2xx} not 2xx` },
    ];
  } finally {
    await Promise.all(procs.map((p) => p.stop()));
    rmSync(dataDir, { recursive: true, force: true });
  }
}

type Load = { rps: number; p99: number; non2xx: number };

async function load(base: string, paths: string[], headers: Record<string, string>, delivery = false, connections = CONNECTIONS): Promise<Load> {
  let n = 0;
  const result = await autocannon({
    url: base,
    connections,
    duration: SECONDS,
    requests: paths.map((p) => ({
      method: "POST" as const,
      path: p,
      headers: { "content-type": "application/json", ...headers },
      body: BODY,
      // Each delivery has its own id, as GitHub sends them: every request is stored, none is a duplicate.
      ...(delivery ? { setupRequest: (req: { headers?: Record<string, string> }) => ({ ...req, headers: { ...req.headers, "x-github-delivery": `d-${process.pid}-${n++}` } }) } : {}),
    })),
  });
  return { rps: result.requests.average, p99: result.latency.p99, non2xx: result.non2xx };
}
