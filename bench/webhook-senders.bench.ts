/**
 * What real senders need must not cost the ingest. First, a signature check must not cost the ingest. Production processes (`node
 * dist/server.mjs` + `node dist/worker.mjs`, the worker draining), two sets of applets: unsigned,
 * and the GitHub preset (HMAC-SHA256 of the raw body checked, a unique X-GitHub-Delivery per request
 * as its dedupe key). The loads alternate (unsigned, signed, signed without a delivery id) for a few
 * rounds, each phase on a drained queue, so drift in the machine's load falls on all; the figure is
 * the median of the rounds' signed/unsigned ratios.
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
import Database from "better-sqlite3";
import { freePorts, requireBuild, start, until, waitHealthy, type Proc } from "./processes";
import type { BenchFigure } from "./types";

const CONNECTIONS = 50;
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const APPLETS = 20;
const SECRET = "bench-signing-secret";
const WAITERS = 100;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
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
      Promise.all(Array.from({ length: APPLETS }, async (_, i) => {
        const a = await service.create({
          name: `bench ${JSON.stringify(config)} ${i}`,
          definition: { version: 1, trigger: { type: "webhook", config }, actions: [{ type: "http", config: { url: `http://127.0.0.1:${sinkPort}/in`, method: "POST", body: { title: "{{trigger.body.title}}" } } }] },
        });
        return `/api/hooks/${a.id}/${a.webhookToken}`;
      }));
    const unsigned = await make({});
    const dedupeOnly = await make({ dedupe_header: "X-GitHub-Delivery" });
    const signed = await make({ verify: "github", hmac_secret: SECRET });
    const responding = await make({ respond_wait_seconds: 10, respond_body: '{"got":"{{steps[0].output.status}}"}' });
    await app.close();

    const appEnv = { ...env, PORT: String(webPort), HOST: "127.0.0.1", SMTP_INBOUND_PORT: String(smtpPort), PUBLIC_URL: `http://127.0.0.1:${webPort}` };
    const worker = start("dist/worker.mjs", appEnv);
    const web = start("dist/server.mjs", appEnv);
    procs.push(worker, web);
    await waitHealthy(`http://127.0.0.1:${webPort}`, [web, worker]);
    await new Promise((r) => setTimeout(r, 2000));

    const base = `http://127.0.0.1:${webPort}`;
    const signature = `sha256=${createHmac("sha256", SECRET).update(BODY).digest("hex")}`;
    // Every phase starts with the queue drained, so the worker's draining weighs on each the same.
    const db = new Database(path.join(dataDir, "app.db"), { readonly: true });
    const busy = db.prepare("SELECT COUNT(*) AS n FROM runs WHERE status IN ('queued', 'running')");
    const drained = () => until("the worker to drain the queue", () => (busy.get() as { n: number }).n === 0, 900_000);
    // Each phase also says what it cost in CPU: the web process's (its own clock, from eld.mjs) and
    // the load generator's (autocannon runs in this process, on the same two cores), per 1,000
    // requests. On a loaded machine req/s moves with everyone else's work; CPU per request barely.
    const phase = async (paths: string[], headers: Record<string, string>, delivery = false): Promise<Phase> => {
      await drained();
      web.resetEld();
      const cpu = process.cpuUsage();
      const r = await load(base, paths, headers, delivery);
      const used = process.cpuUsage(cpu);
      const { cpuMs } = await web.eld();
      const per1000 = r.requests / 1000;
      return { ...r, webCpu: cpuMs / per1000, loaderCpu: (used.user + used.system) / 1000 / per1000 };
    };
    const rounds: Record<PhaseName, Phase>[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      rounds.push({
        unsigned: await phase(unsigned, {}),
        // The same unsigned applets, each request with its own X-GitHub-Delivery (not a dedupe key
        // for them): what the load generator's per-request rewrite costs, and a 60-byte larger payload.
        unsignedWithId: await phase(unsigned, {}, true),
        dedupeOnly: await phase(dedupeOnly, {}, true),
        signed: await phase(signed, { "x-hub-signature-256": signature }, true),
        signedNoDedupe: await phase(signed, { "x-hub-signature-256": signature }),
      });
    }
    const waitersAlone = await phase(unsigned, {});
    await drained();
    const [withWaiters, waiters] = await Promise.all([load(base, unsigned, {}), load(base, responding, {}, false, WAITERS)]);
    db.close();
    const mean = (k: PhaseName) => rounds.reduce((s, r) => s + r[k].rps, 0) / rounds.length;
    const meanOf = (k: PhaseName, f: "webCpu" | "loaderCpu") => rounds.reduce((s, r) => s + r[k][f], 0) / rounds.length;
    // The ratio of each round (its phases minutes apart at most), then their median: a burst of
    // other work on the machine moves one round, not the figure.
    const medianRatio = (a: PhaseName, b: PhaseName) => {
      const ratios = rounds.map((r) => (r[a].rps / r[b].rps) * 100).sort((x, y) => x - y);
      return { median: ratios[Math.floor(ratios.length / 2)]!, ratios };
    };
    const vsStatic = medianRatio("signed", "unsigned");
    const vsSameLoad = medianRatio("signed", "unsignedWithId");
    const bad = rounds.reduce((s, r) => s + r.signed.non2xx + r.signedNoDedupe.non2xx + r.dedupeOnly.non2xx + r.unsignedWithId.non2xx, 0);
    const p99s = (k: PhaseName) => rounds.map((r) => r[k].p99).join("/");
    const perRound = (k: PhaseName) => rounds.map((r) => Math.round(r[k].rps)).join(", ");
    const cpu = (k: PhaseName) => `web ${r1(meanOf(k, "webCpu"))} ms, load generator ${r1(meanOf(k, "loaderCpu"))} ms CPU per 1,000 requests`;
    return [
      { name: `unsigned webhook ingest, 50 connections, worker draining (mean of ${ROUNDS} rounds)`, unit: "req/s", value: mean("unsigned"), notes: `per round ${perRound("unsigned")}; p99 ${p99s("unsigned")} ms; ${cpu("unsigned")}` },
      { name: "unsigned, a unique X-GitHub-Delivery per request (autocannon idReplacement), not a dedupe key", unit: "req/s", value: mean("unsignedWithId"), notes: `per round ${perRound("unsignedWithId")}; p99 ${p99s("unsignedWithId")} ms; ${cpu("unsignedWithId")}` },
      { name: "unsigned, the unique X-GitHub-Delivery as dedupe key (dedupe_header)", unit: "req/s", value: mean("dedupeOnly"), notes: `per round ${perRound("dedupeOnly")}; p99 ${p99s("dedupeOnly")} ms; ${cpu("dedupeOnly")}` },
      { name: "GitHub preset (HMAC check + a unique X-GitHub-Delivery as dedupe key), same run", unit: "req/s", value: mean("signed"), notes: `per round ${perRound("signed")}; p99 ${p99s("signed")} ms; ${cpu("signed")}; ${bad} answers not 202` },
      { name: "GitHub preset without a delivery id (the HMAC check alone)", unit: "req/s", value: mean("signedNoDedupe"), notes: `per round ${perRound("signedNoDedupe")}; p99 ${p99s("signedNoDedupe")} ms; ${cpu("signedNoDedupe")}` },
      { name: "signed (with dedupe key) vs unsigned ingest under the same load (a unique delivery id in both), median of the rounds' ratios", unit: "%", value: vsSameLoad.median, target: ">= 90", notes: `rounds: ${vsSameLoad.ratios.map((r) => Math.round(r)).join(", ")} %` },
      { name: "signed (with dedupe key) vs unsigned with the load generator's static requests (the figure of the first run), median", unit: "%", value: vsStatic.median, notes: `rounds: ${vsStatic.ratios.map((r) => Math.round(r)).join(", ")} %; the difference to the line above is autocannon's per-request rewrite on the same cores` },
      {
        name: "web process CPU per 1,000 webhooks: GitHub preset vs unsigned with the same unique header",
        unit: "%",
        value: (meanOf("signed", "webCpu") / meanOf("unsignedWithId", "webCpu")) * 100,
        notes: `the server's own cost of the HMAC check and the dedupe key, independent of the machine's load; dedupe key alone ${Math.round((meanOf("dedupeOnly", "webCpu") / meanOf("unsignedWithId", "webCpu")) * 100)} %`,
      },
      {
        name: `unsigned ingest while ${WAITERS} senders wait for their run's answer`,
        unit: "req/s",
        value: withWaiters.rps,
        notes: `alone just before: ${Math.round(waitersAlone.rps)} req/s (${Math.round((withWaiters.rps / waitersAlone.rps) * 100)} %); p99 ${withWaiters.p99} ms vs ${waitersAlone.p99} ms; the waiting senders got ${Math.round(waiters.rps)} answers/s, p99 ${waiters.p99} ms, ${waiters.non2xx} not 2xx`,
      },
    ];
  } finally {
    await Promise.all(procs.map((p) => p.stop()));
    rmSync(dataDir, { recursive: true, force: true });
  }
}

type Load = { rps: number; p99: number; non2xx: number; requests: number };
type Phase = Load & { webCpu: number; loaderCpu: number };
type PhaseName = "unsigned" | "unsignedWithId" | "dedupeOnly" | "signed" | "signedNoDedupe";
const r1 = (v: number) => Math.round(v * 10) / 10;

async function load(base: string, paths: string[], headers: Record<string, string>, delivery = false, connections = CONNECTIONS): Promise<Load> {
  const result = await autocannon({
    url: base,
    connections,
    idReplacement: delivery,
    duration: SECONDS,
    requests: paths.map((p) => ({
      method: "POST" as const,
      path: p,
      headers: { "content-type": "application/json", ...headers },
      body: BODY,
      // Each delivery has its own id, as GitHub sends them: every request is stored, none is a
      // duplicate. autocannon writes a fresh id into `[<id>]` itself, cheaper for the load
      // generator (on the same cores) than a setupRequest callback per request.
      ...(delivery ? { headers: { "content-type": "application/json", ...headers, "x-github-delivery": "[<id>]" } } : {}),
    })),
  });
  return { rps: result.requests.average, p99: result.latency.p99, non2xx: result.non2xx, requests: result.requests.total };
}
