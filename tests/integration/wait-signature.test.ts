import { createHmac } from "node:crypto";
import { http as mock, passthrough } from "msw";
import { afterEach, beforeEach, expect, test } from "vitest";
import { waitLinks } from "@/lib/waits/links";
import { createTestApp, type TestApp } from "../helpers/db";
import { forEachEngine } from "../helpers/engines";
import { sentTo, server, useHttpMocks } from "../helpers/http";
import { until } from "../helpers/wait";
import { serveIngress } from "../helpers/ingress";
import { startWorker } from "../helpers/worker";

/**
 * A `for_call` wait's `signature` (the webhook trigger's presets, lib/webhooks/signature.ts): the
 * resume route counts a call only when it is signed; a forged or unsigned one gets 401, changes
 * nothing and leaves the link good for the signed call. Real server, both engines.
 */

useHttpMocks();
beforeEach(() => server.use(mock.all(/^http:\/\/127\.0\.0\.1:\d+\//, () => passthrough())));

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const GITHUB_SECRET = "gh-wait-secret";
const STRIPE_SECRET = "whsec_test_wait_secret";
const hex = (key: string, data: string) => createHmac("sha256", key).update(data).digest("hex");
const applet = (signature: unknown) => ({
  version: 2,
  trigger: { type: "webhook", config: {} },
  steps: [
    { id: "paid", type: "wait", kind: "for_call", timeout: "1d", signature },
    { id: "after", type: "http", config: { url: "https://status.test/status/200?step=after", method: "POST", body: { amount: "{{steps.paid.output.amount}}" } } },
  ],
});

async function serveLinks(app: TestApp) {
  const { base: origin } = await serveIngress(app, cleanups, { waitLinks: true });
  return (url: string, body: string, headers: Record<string, string> = {}) =>
    fetch(url.replace(app.config.publicUrl, origin), { method: "POST", body, headers: { "content-type": "application/json", ...headers } });
}

async function waitingRun(app: TestApp, signature: unknown) {
  const a = await app.applets.create({ name: "signed call", definition: applet(signature) });
  const { runId } = await app.applets.test(a.id, { body: {} });
  const worker = startWorker(app);
  cleanups.push(() => worker.stop());
  await until(async () => (await app.store.runs.get(runId))!.status === "waiting", "the run to wait");
  return { runId, url: waitLinks(app.config.publicUrl, app.config.sessionSecret, runId, 0).resume_url };
}

forEachEngine((engine) => {
  test("GitHub preset: unsigned and forged calls get 401 and change nothing; the correctly signed call resumes the run", async () => {
    const app = createTestApp({ engine, start: "2026-03-07T14:00:00.000Z" });
    cleanups.push(() => app.cleanup());
    await app.secrets.set("GH_HOOK", GITHUB_SECRET);
    const { runId, url } = await waitingRun(app, { verify: "github", hmac_secret: "{{secrets.GH_HOOK}}" });
    const post = await serveLinks(app);
    const body = JSON.stringify({ amount: 42 });

    const unsigned = await post(url, body);
    expect(unsigned.status).toBe(401);
    expect(await unsigned.json()).toMatchObject({ status: "bad_signature", error: expect.stringContaining("GitHub") });
    const forged = await post(url, body, { "x-hub-signature-256": `sha256=${hex("not-the-secret", body)}` });
    expect(forged.status).toBe(401);
    // Signed, but for another body.
    const swapped = await post(url, JSON.stringify({ amount: 1_000_000 }), { "x-hub-signature-256": `sha256=${hex(GITHUB_SECRET, body)}` });
    expect(swapped.status).toBe(401);
    expect(await app.store.runs.get(runId)).toMatchObject({ status: "waiting" });
    expect(await app.store.waits.get(runId, 0)).toMatchObject({ resolution: null });

    const signed = await post(url, body, { "x-hub-signature-256": `sha256=${hex(GITHUB_SECRET, body)}` });
    expect(signed.status).toBe(202);
    await until(async () => (await app.store.runs.get(runId))!.status === "succeeded", "the resumed run to finish");
    expect(JSON.parse(sentTo("status")[0]!.body)).toEqual({ amount: 42 });
    // Used once: a second signed call is told so.
    const again = await post(url, body, { "x-hub-signature-256": `sha256=${hex(GITHUB_SECRET, body)}` });
    expect(again.status).toBe(409);
  }, 60_000);

  test("Stripe preset: a signature outside the replay window or with a wrong secret is refused; a fresh one counts", async () => {
    const app = createTestApp({ engine, start: "2026-03-07T14:00:00.000Z" });
    cleanups.push(() => app.cleanup());
    await app.secrets.set("STRIPE_WHSEC", STRIPE_SECRET);
    const { runId, url } = await waitingRun(app, { verify: "stripe", hmac_secret: "{{secrets.STRIPE_WHSEC}}", tolerance_seconds: 300 });
    const post = await serveLinks(app);
    const body = JSON.stringify({ id: "evt_1", amount: 7 });
    const now = Math.floor(app.clock.now().getTime() / 1000);
    const stripe = (t: number, secret = STRIPE_SECRET) => ({ "stripe-signature": `t=${t},v1=${hex(secret, `${t}.${body}`)}` });

    expect((await post(url, body, stripe(now - 3600))).status).toBe(401);
    expect((await post(url, body, stripe(now, "whsec_wrong"))).status).toBe(401);
    expect(await app.store.waits.get(runId, 0)).toMatchObject({ resolution: null });
    expect((await post(url, body, stripe(now))).status).toBe(202);
    await until(async () => (await app.store.runs.get(runId))!.status === "succeeded", "the resumed run to finish");
    expect(await app.store.waits.get(runId, 0)).toMatchObject({ resolution: "called", output: { id: "evt_1", amount: 7 } });
  }, 60_000);

  test("a call that comes before the run reached its signed wait is checked too", async () => {
    const app = createTestApp({ engine, start: "2026-03-07T14:00:00.000Z" });
    cleanups.push(() => app.cleanup());
    await app.secrets.set("GH_HOOK", GITHUB_SECRET);
    const a = await app.applets.create({ name: "early", definition: applet({ verify: "github", hmac_secret: "{{secrets.GH_HOOK}}" }) });
    const { runId } = await app.applets.test(a.id, { body: {} });
    const url = waitLinks(app.config.publicUrl, app.config.sessionSecret, runId, 0).resume_url;
    const post = await serveLinks(app);
    const body = JSON.stringify({ amount: 5 });
    // No worker yet: the run is queued, its wait not reached.
    expect((await post(url, body)).status).toBe(401);
    expect(await app.store.waits.get(runId, 0)).toBeNull();
    expect((await post(url, body, { "x-hub-signature-256": `sha256=${hex(GITHUB_SECRET, body)}` })).status).toBe(202);
    const worker = startWorker(app);
    cleanups.push(() => worker.stop());
    await until(async () => (await app.store.runs.get(runId))!.status === "succeeded", "the run to pass its wait at once");
  }, 60_000);
});

test("a wait's signature is checked on save: an unknown preset, a missing secret, no header for hmac, on a kind that has no call", async () => {
  const app = createTestApp();
  cleanups.push(() => app.cleanup());
  const problems = async (signature: unknown, kind = "for_call") => {
    const def = applet(signature);
    (def.steps[0] as Record<string, unknown>).kind = kind;
    if (kind === "delay") (def.steps[0] as Record<string, unknown>).duration = "1h";
    const err = (await app.applets.create({ name: "x", definition: def }).then(
      () => null,
      (e: unknown) => e,
    )) as { details?: { path: string; message: string }[] } | null;
    return err?.details ?? [];
  };
  expect(await problems({ verify: "gitlab", hmac_secret: "{{secrets.X}}" })).toEqual([
    { path: "definition.steps.0.signature.verify", message: expect.stringContaining("must be one of hmac, github, stripe") },
  ]);
  expect(await problems({ verify: "github" })).toEqual([{ path: "definition.steps.0.signature.hmac_secret", message: "GitHub needs a secret" }]);
  expect(await problems({ verify: "hmac", hmac_secret: "{{secrets.X}}" })).toEqual([
    { path: "definition.steps.0.signature.secret_header", message: "the HMAC check needs the header that carries the signature" },
  ]);
  expect(await problems({ verify: "github", hmac_secret: "gh-literal-secret" })).toEqual([
    { path: "definition.steps.0.signature.hmac_secret", message: expect.stringContaining("must name a stored secret, such as {{secrets.") },
  ]);
  expect(await problems({ verify: "none" })).toEqual([{ path: "definition.steps.0.signature.verify", message: expect.stringContaining('"none" checks nothing') }]);
  expect(await problems({ verify: "github", hmac_secret: "{{secrets.X}}", extra: 1 })).toEqual([{ path: "definition.steps.0.signature", message: "unknown key: extra" }]);
  expect(await problems({ verify: "github", hmac_secret: "{{secrets.X}}" }, "delay")).toEqual([{ path: "definition.steps.0.signature", message: "is not read by a delay wait; leave it out" }]);
  expect(await problems({ verify: "github", hmac_secret: "{{secrets.X}}" })).toEqual([]);
});
