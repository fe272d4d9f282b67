import { http as mock, passthrough } from "msw";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { startTimedSweeper } from "@/lib/timed/sweep";
import { WAIT_PATH, waitLinks } from "@/lib/waits/links";
import { resumeDueWaits } from "@/lib/waits/tick";
import { createTestApp, type TestApp } from "../helpers/db";
import { forEachEngine } from "../helpers/engines";
import { sentTo, server, useHttpMocks } from "../helpers/http";
import { until } from "../helpers/wait";
import { serveIngress } from "../helpers/ingress";
import { startWorker } from "../helpers/worker";

useHttpMocks();
// The wait links are served by a real server on 127.0.0.1; only outside services are mocked.
beforeEach(() => server.use(mock.all(/^http:\/\/127\.0\.0\.1:\d+\//, () => passthrough())));

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const send = (n: string, body: unknown = { n }) => ({ id: n, type: "http", config: { url: `https://status.test/status/200?step=${n}`, method: "POST", body } });
const applet = (steps: unknown[]) => ({ version: 2, trigger: { type: "webhook", config: {} }, steps });

/** The ingress with the wait links, on a real port; requests as a browser (Accept: text/html) or a client. */
async function serveLinks(app: TestApp) {
  const { base: origin } = await serveIngress(app, cleanups, { waitLinks: true });
  /** A link as the run got it (PUBLIC_URL is the app's), sent to this server. */
  const local = (url: string) => url.replace(app.config.publicUrl, origin);
  return {
    get: (url: string, html = true) => fetch(local(url), { headers: html ? { accept: "text/html" } : {} }),
    post: (url: string, body?: string, headers: Record<string, string> = {}) => fetch(local(url), { method: "POST", body, headers }),
  };
}

const runOf = async (app: TestApp, runId: string) => (await app.store.runs.get(runId))!;
const waitStep = (app: TestApp, runId: string) => (async () => (await runOf(app, runId)).steps.find((s) => s.kind === "wait"))();

forEachEngine((engine) => {
  test("a 3-day delay resumes once, after the app was closed and opened again", async () => {
    const first = createTestApp({ engine, start: "2026-03-07T12:00:00.000Z" });
    cleanups.push(() => first.cleanup());
    const a = await first.applets.create({ name: "three days later", definition: applet([send("before"), { id: "pause", type: "wait", kind: "delay", duration: "3d" }, send("after")]) });
    const { runId } = await first.applets.test(a.id, { body: {} });
    const worker = startWorker(first);
    await worker.drain();
    expect(await runOf(first, runId)).toMatchObject({ status: "waiting" });
    expect(sentTo("status").map((s) => new URL(s.url).searchParams.get("step"))).toEqual(["before"]);
    // Nothing is held while it waits: no running run, no claim (claim tokens are the store's own: read from their column).
    expect(Number((await first.sql.get<{ n: number }>("SELECT COUNT(*) AS n FROM runs WHERE status = 'running' OR claim_token IS NOT NULL"))!.n)).toBe(0);
    expect(await first.store.waits.countWaiting()).toEqual({ delay: 1 });
    first.clock.set("2026-03-09T12:00:00.000Z");
    expect(await resumeDueWaits(first)).toBe(0);
    await worker.stop();

    // Another process on the same database (SQLite: the file reopened after the first closed; PostgreSQL: a new pool).
    let second: TestApp;
    if (engine.name === "sqlite") {
      await first.store.close();
      second = createTestApp({ dataDir: first.dataDir, start: "2026-03-10T12:00:01.000Z" });
      cleanups.push(() => second.store.close());
    } else {
      second = createTestApp({ peerOf: first, start: "2026-03-10T12:00:01.000Z" });
      cleanups.push(() => second.store.close());
    }
    const third = createTestApp({ peerOf: second, start: "2026-03-10T12:00:01.000Z" });
    cleanups.push(() => third.store.close());
    const worker2 = startWorker(second);
    cleanups.push(() => worker2.stop());
    // Two ticks at once (two workers): the wait resumes once.
    const resumed = await Promise.all([resumeDueWaits(second), resumeDueWaits(third), resumeDueWaits(second)]);
    expect(resumed.reduce((x, y) => x + y, 0)).toBe(1);
    await until(async () => (await runOf(second, runId)).status === "succeeded", "the delayed run to finish");
    expect(sentTo("status").map((s) => new URL(s.url).searchParams.get("step"))).toEqual(["before", "after"]);
    const step = (await waitStep(second, runId))!;
    expect(step).toMatchObject({ status: "succeeded", decision: "time" });
    // Resuming did not mark the next action as possibly sent twice.
    expect((await runOf(second, runId)).steps.some((s) => s.rerun)).toBe(false);
    expect(await resumeDueWaits(second)).toBe(0);
  }, 60_000);

  test("an approval link: a GET (a mail scanner) decides nothing, one POST decides once, a second is told it was decided", async () => {
    const app = createTestApp({ engine, start: "2026-03-07T14:02:00.000Z" });
    cleanups.push(() => app.cleanup());
    const a = await app.applets.create({
      name: "post when approved",
      definition: applet([
        send("ask", { approve: "{{run.approve_url}}", deny: "{{run.deny_url}}" }),
        { id: "approval", type: "wait", kind: "for_approval", message: "Post the draft {{trigger.body.title}}?", timeout: "2h" },
        send("post", { decided: "{{steps.approval.output.resolution}}" }),
      ]),
    });
    const { runId } = await app.applets.test(a.id, { body: { title: "Spring sale" } });
    const worker = startWorker(app);
    cleanups.push(() => worker.stop());
    await worker.drain();
    expect(await runOf(app, runId)).toMatchObject({ status: "waiting" });
    const asked = JSON.parse(sentTo("status")[0]!.body) as { approve: string; deny: string };
    expect(asked.approve).toBe(waitLinks(app.config.publicUrl, app.config.sessionSecret, runId, 0).approve_url);
    const [waiting] = await app.store.waits.listWaiting({ limit: 10 });
    expect(waiting).toMatchObject({ runId, kind: "for_approval" });
    // The step that sent the links is named by its host only (a URL's path may hold a token).
    expect((await waitStep(app, runId))!.why).toBe("waiting for approval — sent to status.test at 14:02, times out 16:02");

    const links = await serveLinks(app);
    // A scanner fetches both links: the page shows what is asked and decides nothing.
    const page = await links.get(asked.approve);
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain("Post the draft Spring sale?");
    expect(html).toContain('<form method="post">');
    expect((await links.get(asked.deny, false)).status).toBe(200);
    await worker.drain();
    expect(await runOf(app, runId)).toMatchObject({ status: "waiting" });

    // One click decides.
    const clicked = await links.post(asked.approve, "", { accept: "text/html" });
    expect(clicked.status).toBe(200);
    expect(await clicked.text()).toContain("Approved");
    // A second click (or the other link) changes nothing and says it was decided.
    const again = await links.post(asked.deny);
    expect(again.status).toBe(409);
    expect(await again.json()).toMatchObject({ status: "already_decided", resolution: "approved", by: "127.0.0.1" });
    await until(async () => (await runOf(app, runId)).status === "succeeded", "the approved run to finish");
    expect(JSON.parse(sentTo("status")[1]!.body)).toEqual({ decided: "approved" });
    expect(await waitStep(app, runId)).toMatchObject({ status: "succeeded", decision: "approved", output: { resolution: "approved", by: "127.0.0.1" } });
  }, 60_000);

  test("a timeout takes its on_timeout path; the link used after it is told it timed out", async () => {
    const app = createTestApp({ engine, start: "2026-03-07T14:00:00.000Z" });
    cleanups.push(() => app.cleanup());
    const a = await app.applets.create({
      name: "approval or reminder",
      definition: applet([
        { id: "approval", type: "wait", kind: "for_approval", timeout: "30m", on_timeout: [send("nudge")] },
        send("never"),
      ]),
    });
    const { runId } = await app.applets.test(a.id, { body: {} });
    const worker = startWorker(app);
    cleanups.push(() => worker.stop());
    const sweeper = startTimedSweeper({ app, intervalMs: 5, onDispatched: () => worker.loop.wake() });
    cleanups.push(() => sweeper.stop());
    await until(async () => (await runOf(app, runId)).status === "waiting", "the run to wait");
    app.clock.set("2026-03-07T14:30:00.000Z");
    await until(async () => (await runOf(app, runId)).status === "succeeded", "the timeout path to run");
    const run = await runOf(app, runId);
    expect(run.error).toContain("timed out; its on_timeout steps ran");
    expect(sentTo("status").map((s) => new URL(s.url).searchParams.get("step"))).toEqual(["nudge"]);
    expect(run.steps.find((s) => s.id === "nudge")).toMatchObject({ place: "approval:on_timeout" });

    const links = await serveLinks(app);
    const late = await links.post(waitLinks(app.config.publicUrl, app.config.sessionSecret, runId, 0).approve_url);
    expect(late.status).toBe(410);
    expect(await late.json()).toMatchObject({ status: "timed_out" });
  }, 60_000);

  test("a resume call continues the run with its body as the step's output; a second call is told the URL was used", async () => {
    const app = createTestApp({ engine, start: "2026-03-07T14:00:00.000Z" });
    cleanups.push(() => app.cleanup());
    const a = await app.applets.create({
      name: "pay then continue",
      definition: applet([
        send("charge", { callback: "{{run.resume_url}}" }),
        { id: "paid", type: "wait", kind: "for_call", timeout: "1d" },
        send("receipt", { amount: "{{steps.paid.output.amount}}", status: "{{steps.paid.output.status}}" }),
      ]),
    });
    const { runId } = await app.applets.test(a.id, { body: {} });
    const worker = startWorker(app);
    cleanups.push(() => worker.stop());
    await worker.drain();
    const callback = (JSON.parse(sentTo("status")[0]!.body) as { callback: string }).callback;
    const links = await serveLinks(app);
    // Looking at it resumes nothing.
    expect(await (await links.get(callback, false)).json()).toMatchObject({ status: "waiting" });
    expect(await runOf(app, runId)).toMatchObject({ status: "waiting" });
    // A body over the webhook limit is refused as the webhook trigger refuses it.
    expect((await links.post(callback, "x".repeat(1024 * 1024 + 1))).status).toBe(413);
    expect(await runOf(app, runId)).toMatchObject({ status: "waiting" });

    const called = await links.post(callback, JSON.stringify({ amount: 42, status: "paid" }), { "content-type": "application/json" });
    expect(called.status).toBe(202);
    const twice = await links.post(callback, JSON.stringify({ amount: 1 }), { "content-type": "application/json" });
    expect(twice.status).toBe(409);
    expect(await twice.json()).toMatchObject({ status: "already_used" });
    await until(async () => (await runOf(app, runId)).status === "succeeded", "the resumed run to finish");
    expect(JSON.parse(sentTo("status")[1]!.body)).toEqual({ amount: 42, status: "paid" });
    expect(await waitStep(app, runId)).toMatchObject({ decision: "called", output: { amount: 42, status: "paid" } });
  }, 60_000);

  test("a cancelled waiting run: its link says it was cancelled and changes nothing; an until that renders a non-time fails with what it rendered", async () => {
    const app = createTestApp({ engine, start: "2026-03-07T14:00:00.000Z" });
    cleanups.push(() => app.cleanup());
    const a = await app.applets.create({ name: "wait for call", definition: applet([{ id: "cb", type: "wait", kind: "for_call" }, send("after")]) });
    const { runId } = await app.applets.test(a.id, { body: {} });
    const worker = startWorker(app);
    cleanups.push(() => worker.stop());
    await worker.drain();
    expect(await app.store.waits.cancel(runId, "admin", "cancelled from the run log", app.clock.now())).toBe(true);
    expect(await app.store.waits.cancel(runId, "admin", "again", app.clock.now())).toBe(false);
    const links = await serveLinks(app);
    const r = await links.post(waitLinks(app.config.publicUrl, app.config.sessionSecret, runId, 0).resume_url, "{}");
    expect(r.status).toBe(410);
    expect(await r.json()).toMatchObject({ status: "cancelled" });
    expect(await runOf(app, runId)).toMatchObject({ status: "cancelled" });
    // A wrong MAC is not found.
    expect((await links.post(`${app.config.publicUrl}${WAIT_PATH}${runId}/0/${"A".repeat(32)}`, "{}")).status).toBe(404);

    const b = await app.applets.create({ name: "until", definition: applet([{ id: "later", type: "wait", kind: "until", at: "{{trigger.body.when}}" }, send("x")]) });
    const bad = await app.applets.test(b.id, { body: { when: "next tuesday" } });
    const naive = await app.applets.test(b.id, { body: { when: "2026-03-08T09:00:00" } });
    await worker.drain();
    expect(await runOf(app, bad.runId)).toMatchObject({ status: "failed" });
    expect((await runOf(app, bad.runId)).error).toContain('"next tuesday" is not a time');
    expect((await runOf(app, naive.runId)).error).toContain("a time without a zone");
  }, 60_000);
});

describe("waiting runs and the applet's order", () => {
  test("a waiting run does not hold back the applet's next run", async () => {
    const app = createTestApp({ start: "2026-03-07T14:00:00.000Z" });
    cleanups.push(() => app.cleanup());
    const a = await app.applets.create({ name: "order", definition: applet([{ id: "gate", type: "wait", kind: "delay", duration: "1h" }, send("done")]) });
    const worker = startWorker(app);
    cleanups.push(() => worker.stop());
    const first = await app.applets.test(a.id, { body: {} });
    await worker.drain();
    const b = await app.applets.create({ name: "plain", definition: applet([send("plain")]) });
    const second = await app.applets.test(b.id, { body: {} });
    const third = await app.applets.test(a.id, { body: {} });
    await worker.drain();
    expect(await runOf(app, first.runId)).toMatchObject({ status: "waiting" });
    expect(await runOf(app, second.runId)).toMatchObject({ status: "succeeded" });
    expect(await runOf(app, third.runId)).toMatchObject({ status: "waiting" });
  });
});

describe("where a waiting run's links went", () => {
  forEachEngine((engine) => {
    test("an email that sent the approve link, then a for_approval wait: /api/waits, the runs list and the run page say sent to the address at that time", async () => {
      const { createApi } = await import("@/lib/api");
      const { testIdentity } = await import("../helpers/auth");
      const { readdirSync, readFileSync } = await import("node:fs");
      const path = await import("node:path");
      const app = createTestApp({ engine, start: "2026-03-07T13:02:00.000Z" });
      cleanups.push(() => app.cleanup());
      const a = await app.applets.create({
        name: "ask ops",
        definition: {
          ...applet([
            { id: "ask", type: "email", config: { to: "Ops <ops@example.com>, lead@example.com", subject: "Approve {{trigger.body.title}}?", body_markdown: "Approve: {{run.approve_url}}\n\nDeny: {{run.deny_url}}" } },
            { id: "approval", type: "wait", kind: "for_approval", message: "Post {{trigger.body.title}}?", timeout: "2h" },
            send("post"),
          ]),
          timezone: "Europe/Berlin",
        },
      });
      const { runId } = await app.applets.test(a.id, { body: { title: "the draft" } });
      const worker = startWorker(app);
      cleanups.push(() => worker.stop());
      await worker.drain();
      // The mail really went (to the outbox, as development sends it) with the link in it.
      const outbox = path.join(app.dataDir, "outbox");
      const eml = readFileSync(path.join(outbox, readdirSync(outbox)[0]!), "utf8").replace(/=\r?\n/g, "");
      expect(eml).toContain(`/api/waits/${runId}/0/`);

      const words = "waiting for approval — sent to ops@example.com and 1 other at 14:02, times out 16:02";
      const api = createApi({ app, applets: app.applets, auth: testIdentity(app) });
      const get = async (p: string) => {
        const res = await api.handle(new Request(`${app.config.publicUrl}${p}`));
        expect(res.status, await res.clone().text()).toBe(200);
        return res.json();
      };
      const listed = (await get("/api/waits")) as { waiting: Record<string, unknown>[] };
      expect(listed.waiting).toEqual([expect.objectContaining({ run_id: runId, kind: "for_approval", summary: words, message: "Post the draft?", sent: [{ to: "ops@example.com and 1 other", at: expect.stringMatching(/^2026-03-07T13:02:00/) }], until: null })]);
      // The runs list shows the run's reason; the run page's wait step says the same.
      const runs = (await get(`/api/runs?applet_id=${a.id}`)) as { runs: { id: string; status: string; error: string }[] };
      expect(runs.runs[0]).toMatchObject({ id: runId, status: "waiting", error: words });
      expect(await waitStep(app, runId)).toMatchObject({ status: "running", decision: "waiting", why: words, output: expect.objectContaining({ sent: [{ to: "ops@example.com and 1 other", at: expect.stringMatching(/^2026-03-07T13:02:00/) }] }) });

      // Later in the day the list still reads the sending time as a clock time; the next day with its date.
      app.clock.set("2026-03-08T09:00:00.000Z");
      const nextDay = (await get("/api/waits")) as { waiting: { summary: string }[] };
      expect(nextDay.waiting[0]!.summary).toBe("waiting for approval — sent to ops@example.com and 1 other at 2026-03-07 14:02, times out 2026-03-07 16:02");
    }, 60_000);
  });
});

describe("the run log's waiting runs", () => {
  test("listed with what they wait for, counted by the metrics, resumed now once, cancelled", async () => {
    const { cancelWaiting, resumeNow } = await import("@/lib/waits/control");
    const { collectHealthFigures, renderMetrics } = await import("@/lib/metrics/collect");
    const app = createTestApp({ start: "2026-03-07T14:02:00.000Z" });
    cleanups.push(() => app.cleanup());
    const a = await app.applets.create({ name: "ask", definition: applet([{ id: "ok", type: "wait", kind: "for_approval", timeout: "2h" }, send("go")]) });
    const worker = startWorker(app);
    cleanups.push(() => worker.stop());
    const one = await app.applets.test(a.id, { body: {} });
    const two = await app.applets.test(a.id, { body: {} });
    await worker.drain();
    const metrics = (await renderMetrics(await collectHealthFigures(app))).body;
    expect(metrics).toContain('whenthen_runs_waiting{kind="for_approval"} 2');
    expect(metrics).toContain('whenthen_runs_waiting{kind="delay"} 0');

    expect(await resumeNow(app, one.runId, "admin@example.com")).toEqual({ ok: true });
    expect(await resumeNow(app, one.runId, "admin@example.com")).toMatchObject({ ok: false, status: 409 });
    expect(await cancelWaiting(app, two.runId, "admin@example.com")).toEqual({ ok: true });
    expect(await cancelWaiting(app, one.runId, "admin@example.com")).toMatchObject({ ok: false, status: 409 });
    await worker.drain();
    expect(await runOf(app, one.runId)).toMatchObject({ status: "succeeded" });
    expect(await waitStep(app, one.runId)).toMatchObject({ decision: "resumed", why: expect.stringContaining("by admin@example.com") });
    expect(await runOf(app, two.runId)).toMatchObject({ status: "cancelled", error: "cancelled by admin@example.com while waiting for approval — times out 16:02" });
    expect(sentTo("status")).toHaveLength(1);
  });
});
