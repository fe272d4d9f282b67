import { afterEach, expect, test } from "vitest";
import { alertsOf, createTestApp } from "../helpers/db";
import { forEachEngine } from "../helpers/engines";
import { spawnWorkerProcess, startSink, type WorkerProcess } from "../helpers/processes";
import { until } from "../helpers/wait";

/**
 * On each engine, the worker is SIGKILLed after a run's death is committed (with
 * its alert, in the same transaction) and before the alert was sent; the next worker sends it,
 * once. The first worker's dispatcher is set to look only once an hour, so the kill lands in
 * between for certain; the second looks every 200 ms.
 */
const cleanups: (() => void | Promise<void>)[] = [];
const lastLines = (w: WorkerProcess) => () => `worker's last lines:\n${w.lines.slice(-10).join("\n")}`;
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

forEachEngine((engine) => {
  test("a crash of the worker between the run's death and the alert's send still sends the alert, once", async () => {
    const app = createTestApp({ engine, env: { ALLOW_PRIVATE_URLS: "true", PUBLIC_URL: "https://wt.example.com" } });
    cleanups.push(() => app.cleanup());
    const channel = await startSink();
    cleanups.push(() => channel.close());
    await app.store.alerts.saveSettings(
      { channel: { type: "http", config: { url: channel.url } }, windowMinutes: 15, triggerThreshold: 3, autoPause: false, autoPauseAfter: 5 },
      app.clock.now().toISOString(),
    );
    // Nothing listens on port 9: the http action fails with a network error, and with one attempt the run is dead.
    const applet = await app.applets.create({
      name: "Unreachable",
      definition: { version: 1, trigger: { type: "webhook", config: {} }, actions: [{ type: "http", config: { url: "http://127.0.0.1:9/in" } }], retry: { max_attempts: 1 } },
    });
    const { runId } = await app.applets.test(applet.id, { body: {} });
    const env = { DATA_DIR: app.dataDir, DATABASE_URL: engine.databaseUrl(app.store), ALLOW_PRIVATE_URLS: "true", PUBLIC_URL: "https://wt.example.com", WORKER_LEASE_SECONDS: "2" };

    const first = spawnWorkerProcess({ ...env, ALERT_DISPATCH_MS: "3600000" });
    cleanups.push(() => first.kill());
    const alertRow = async () => (await alertsOf(app.store, applet.id))[0];
    await until(async () => (await alertRow()) !== undefined, "the run's death and its alert to be committed", 30_000, lastLines(first));
    expect((await app.store.runs.get(runId))!.status).toBe("dead");
    expect(await alertRow()).toMatchObject({ status: "pending", runId });
    first.child.kill("SIGKILL");
    expect(await first.exited).toBeNull();
    expect(channel.bodies).toHaveLength(0);

    const second = spawnWorkerProcess({ ...env, ALERT_DISPATCH_MS: "200" });
    cleanups.push(() => second.kill());
    await until(async () => (await alertRow())?.status === "sent", "the next worker to send the alert", 30_000, lastLines(second));
    // Several more dispatcher passes (each records the `alerts` lock's last run) send nothing more.
    const lastPass = async () => (await app.store.jobLocks.get("alerts"))?.lastRunAt ?? "";
    const sentAt = await lastPass();
    let passes = 0;
    let seen = sentAt;
    await until(
      async () => {
        const now = await lastPass();
        if (now !== seen) {
          passes++;
          seen = now;
        }
        return passes >= 3;
      },
      "three more dispatcher passes",
      30_000,
      lastLines(second),
    );
    expect(channel.bodies).toHaveLength(1);
    expect(channel.bodies[0]).toMatchObject({ kind: "failure", applet_id: applet.id, link: `https://wt.example.com/runs/${runId}` });
    expect(String(channel.bodies[0]!.text)).toContain('A run of "Unreachable" went dead');
    second.child.kill("SIGTERM");
    expect(await second.exited).toBe(0);
  }, 120_000);
});
