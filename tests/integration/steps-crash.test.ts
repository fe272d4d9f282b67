import { afterEach, expect, test } from "vitest";
import { createTestApp } from "../helpers/db";
import { spawnWorkerProcess, startSink, type WorkerProcess } from "../helpers/processes";
import { until } from "../helpers/wait";

/**
 * A real worker process is SIGKILLed in the middle of a for_each of 40 items, each an http
 * request; a new worker process takes the run over. The run resumes after the last completed item:
 * the sink sees every item's request, each once, except possibly the one in flight at the kill
 * (told apart by its idempotency key, the same both times, as a receiver that dedupes would).
 */
const cleanups: (() => void | Promise<void>)[] = [];
const lastLines = (w: WorkerProcess) => () => `worker's last lines:\n${w.lines.slice(-10).join("\n")}`;
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

test("SIGKILL in the middle of a for_each: after a restart the run completes, and no completed item is sent again", async () => {
  const app = createTestApp({ env: { ALLOW_PRIVATE_URLS: "true" } });
  cleanups.push(() => app.cleanup());
  // Each request takes a moment, so the kill lands while an item is in flight.
  const sink = await startSink({ delayMs: 25 });
  cleanups.push(() => sink.close());
  const items = Array.from({ length: 40 }, (_, n) => n);
  const applet = await app.applets.create({
    name: "per item",
    definition: {
      version: 2,
      trigger: { type: "webhook", config: {} },
      steps: [{ id: "lines", type: "for_each", items: "{{trigger.body.items}}", steps: [{ id: "send", type: "http", config: { url: sink.url, method: "POST", body: { n: "{{item}}" } } }] }],
    },
  });
  const { runId } = await app.applets.test(applet.id, { body: { items } });
  const env = { DATA_DIR: app.dataDir, ALLOW_PRIVATE_URLS: "true", WORKER_LEASE_SECONDS: "2" };

  const first = spawnWorkerProcess(env);
  cleanups.push(() => first.kill());
  await until(() => sink.bodies.length >= 12, "the first worker to get a few items in", 60_000, lastLines(first));
  first.child.kill("SIGKILL");
  expect(await first.exited).toBeNull();
  const sentByFirst = sink.keys.length;
  expect(sentByFirst).toBeLessThan(items.length);
  expect((await app.store.runs.get(runId))!.status).toBe("running");

  const second = spawnWorkerProcess(env);
  cleanups.push(() => second.kill());
  await until(async () => (await app.store.runs.get(runId))!.status === "succeeded", "the run to complete", 60_000, lastLines(second));

  const run = (await app.store.runs.get(runId))!;
  const keyOf = (n: number) => `${run.eventId}:send[${n}]`;
  // Every item's request arrived, in order, with its own key.
  expect([...new Set(sink.keys)]).toEqual(items.map(keyOf));
  expect(sink.bodies.map((b) => b.n).filter((n, i, all) => i === 0 || all[i - 1] !== n)).toEqual(items);
  // Sent twice: at most the one in flight at the kill, never an item completed before it.
  const counts = new Map<string, number>();
  for (const k of sink.keys) counts.set(k!, (counts.get(k!) ?? 0) + 1);
  const twice = [...counts].filter(([, n]) => n > 1).map(([k]) => k);
  expect(twice.length).toBeLessThanOrEqual(1);
  if (twice.length === 1) expect(twice[0]).toBe(sink.keys[sentByFirst - 1]);
  // The journal: the loop and one entry per item, each once; the resent one says it may have run twice.
  expect(run.attempt).toBe(1);
  expect(run.steps[0]).toMatchObject({ id: "lines", kind: "for_each", status: "succeeded", output: { items: 40, succeeded: 40, failed: 0 } });
  expect(run.steps.slice(1).map((s) => s.iteration)).toEqual(items.map((n) => [n]));
  const rerun = run.steps.filter((s) => s.rerun).map((s) => keyOf(s.iteration![0]!));
  expect(rerun.length).toBeLessThanOrEqual(1);
  if (twice.length === 1) expect(rerun).toEqual(twice);

  second.child.kill("SIGTERM");
  expect(await second.exited).toBe(0);
}, 180_000);
