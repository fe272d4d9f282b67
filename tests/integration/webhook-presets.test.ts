import { createHmac } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createIngress } from "@/lib/http/ingress";
import { createTestApp, webhookToHttp, type TestApp } from "../helpers/db";

/**
 * The webhook trigger checks the signature schemes of real senders, through the real ingress,
 * with signatures computed the way each sender documents; a refused request stores nothing, and a
 * redelivery is answered with the first delivery's ids.
 */
let app: TestApp;
let server: Server;
let base: string;

beforeAll(async () => {
  app = createTestApp({ start: "2026-12-01T10:00:00.000Z" });
  const ingress = createIngress(app);
  server = createServer((req, res) => {
    if (!ingress(req, res)) {
      res.writeHead(418);
      res.end();
    }
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((r) => server.close(r));
  await app.cleanup();
});

const count = async (table: "events" | "runs") => Number((await app.sql.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table}`))!.n);
const nowSeconds = () => Math.floor(app.clock.now().getTime() / 1000);
const hook = async (config: Record<string, unknown>) => {
  const a = await app.applets.create({ name: `hook ${JSON.stringify(config)}`, definition: { ...webhookToHttp("https://status.test/status/200"), trigger: { type: "webhook", config } } });
  return `${base}/api/hooks/${a.id}/${a.webhookToken}`;
};
const post = (url: string, body: string, headers: Record<string, string>) => fetch(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body });

async function refusedAndNothingStored(res: Promise<Response>) {
  const before = [await count("events"), await count("runs")];
  const r = await res;
  expect(r.status).toBe(401);
  expect(await r.text()).toBe("");
  expect([await count("events"), await count("runs")]).toEqual(before);
}

describe("signature presets on the real ingress", () => {
  test("GitHub: a valid X-Hub-Signature-256 is accepted, a wrong or missing one gets an empty 401 and stores nothing", async () => {
    await app.secrets.set("GH_SECRET", "It's a Secret to Everybody");
    const url = await hook({ verify: "github", hmac_secret: "{{secrets.GH_SECRET}}" });
    const body = '{"zen":"Keep it logically awesome."}';
    const sig = `sha256=${createHmac("sha256", "It's a Secret to Everybody").update(body).digest("hex")}`;
    expect((await post(url, body, { "x-hub-signature-256": sig, "x-github-delivery": "d-1" })).status).toBe(202);
    await refusedAndNothingStored(post(url, body + " ", { "x-hub-signature-256": sig, "x-github-delivery": "d-2" }));
    await refusedAndNothingStored(post(url, body, {}));
  });

  test("Stripe: t=…,v1=… within the tolerance is accepted; the same signature replayed 6 minutes later gets 401", async () => {
    await app.secrets.set("STRIPE_WHSEC", "whsec_abc123");
    const url = await hook({ verify: "stripe", hmac_secret: "{{secrets.STRIPE_WHSEC}}" });
    const body = JSON.stringify({ id: "evt_1Q", object: "event", type: "checkout.session.completed" });
    const t = nowSeconds();
    const header = `t=${t},v1=${createHmac("sha256", "whsec_abc123").update(`${t}.${body}`).digest("hex")}`;
    expect((await post(url, body, { "stripe-signature": header })).status).toBe(202);
    app.clock.advance(6 * 60_000);
    await refusedAndNothingStored(post(url, body, { "stripe-signature": header }));
  });

  test("Slack: v0 over v0:timestamp:body with X-Slack-Request-Timestamp; a stale timestamp gets 401", async () => {
    await app.secrets.set("SLACK_SIGNING", "8f742231b10e8888abcd99yyyzzz85a5");
    const url = await hook({ verify: "slack", hmac_secret: "{{secrets.SLACK_SIGNING}}" });
    const body = "token=x&command=%2Fdeploy&text=now";
    const sign = (ts: number) => ({ "content-type": "application/x-www-form-urlencoded", "x-slack-request-timestamp": String(ts), "x-slack-signature": `v0=${createHmac("sha256", "8f742231b10e8888abcd99yyyzzz85a5").update(`v0:${ts}:${body}`).digest("hex")}` });
    const ok = await post(url, body, sign(nowSeconds()));
    expect(ok.status).toBe(202);
    await refusedAndNothingStored(post(url, body, sign(nowSeconds() - 301)));
  });

  test("Shopify: base64 HMAC in X-Shopify-Hmac-Sha256", async () => {
    const url = await hook({ verify: "shopify", hmac_secret: "shpss_0123" });
    const body = '{"id":820982911946154508}';
    expect((await post(url, body, { "x-shopify-hmac-sha256": createHmac("sha256", "shpss_0123").update(body).digest("base64"), "x-shopify-webhook-id": "s-1" })).status).toBe(202);
    await refusedAndNothingStored(post(url, body, { "x-shopify-hmac-sha256": createHmac("sha256", "shpss_0124").update(body).digest("base64") }));
  });

  test("Standard Webhooks / Svix: webhook-id, webhook-timestamp, webhook-signature with a whsec_ key", async () => {
    const key = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const url = await hook({ verify: "standard", hmac_secret: key });
    const body = '{"type":"invoice.paid"}';
    const ts = nowSeconds();
    const sig = createHmac("sha256", Buffer.from(key.slice(6), "base64")).update(`msg_1.${ts}.${body}`).digest("base64");
    expect((await post(url, body, { "webhook-id": "msg_1", "webhook-timestamp": String(ts), "webhook-signature": `v1,${sig}` })).status).toBe(202);
    await refusedAndNothingStored(post(url, body, { "webhook-id": "msg_2", "webhook-timestamp": String(ts), "webhook-signature": `v1,${sig}` }));
  });

  test("bearer and basic: the whole credential or 401", async () => {
    const bearer = await hook({ verify: "bearer", hmac_secret: "tok_live_1" });
    expect((await post(bearer, "{}", { authorization: "Bearer tok_live_1" })).status).toBe(202);
    await refusedAndNothingStored(post(bearer, "{}", { authorization: "Bearer tok_live_2" }));
    const basic = await hook({ verify: "basic", hmac_secret: "zapier:pa55" });
    expect((await post(basic, "{}", { authorization: `Basic ${Buffer.from("zapier:pa55").toString("base64")}` })).status).toBe(202);
    await refusedAndNothingStored(post(basic, "{}", { authorization: `Basic ${Buffer.from("zapier:pa56").toString("base64")}` }));
  });

  test("a rotated signing secret applies to the next request (the stored secrets are read once per turn of the event loop, decrypted once per value)", async () => {
    await app.secrets.set("ROTATED", "first-secret");
    const url = await hook({ verify: "github", hmac_secret: "{{secrets.ROTATED}}" });
    const body = '{"n":1}';
    const signed = (secret: string) => ({ "x-hub-signature-256": `sha256=${createHmac("sha256", secret).update(body).digest("hex")}` });
    expect((await post(url, body, signed("first-secret"))).status).toBe(202);
    await app.secrets.set("ROTATED", "second-secret");
    await refusedAndNothingStored(post(url, body, signed("first-secret")));
    expect((await post(url, body, signed("second-secret"))).status).toBe(202);
  });

  test("a preset whose secret reference points at a deleted secret refuses every request instead of accepting them", async () => {
    await app.secrets.set("GONE", "x");
    const url = await hook({ verify: "bearer", hmac_secret: "{{secrets.GONE}}" });
    await app.secrets.delete("GONE");
    await refusedAndNothingStored(post(url, "{}", { authorization: "Bearer " }));
  });
});

describe("idempotent webhooks", () => {
  test("a redelivery with the same X-GitHub-Delivery is answered 200 with the first run's ids and stores nothing", async () => {
    const url = await hook({ verify: "github", hmac_secret: "gh" });
    const body = '{"action":"opened"}';
    const headers = { "x-hub-signature-256": `sha256=${createHmac("sha256", "gh").update(body).digest("hex")}`, "x-github-delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958" };
    const first = (await (await post(url, body, headers)).json()) as { run_id: string; event_id: string };
    const before = [await count("events"), await count("runs")];
    const again = await post(url, body, headers);
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({ duplicate: true, run_id: first.run_id, event_id: first.event_id });
    expect([await count("events"), await count("runs")]).toEqual(before);
    // Another delivery id is another event.
    expect((await post(url, body, { ...headers, "x-github-delivery": "other" })).status).toBe(202);
  });

  test("Stripe dedupes by the event's id in the body; a configured Idempotency-Key header works without a preset", async () => {
    const url = await hook({ verify: "stripe", hmac_secret: "whsec_s" });
    const body = JSON.stringify({ id: "evt_same", type: "charge.refunded" });
    const sign = () => {
      const t = nowSeconds();
      return { "stripe-signature": `t=${t},v1=${createHmac("sha256", "whsec_s").update(`${t}.${body}`).digest("hex")}` };
    };
    const first = (await (await post(url, body, sign())).json()) as { run_id: string };
    app.clock.advance(30_000);
    const again = await post(url, body, sign());
    expect(again.status).toBe(200);
    expect(((await again.json()) as { run_id: string }).run_id).toBe(first.run_id);

    const plain = await hook({ dedupe_header: "Idempotency-Key" });
    const a = (await (await post(plain, '{"n":1}', { "idempotency-key": "k-1" })).json()) as { run_id: string };
    const b = await post(plain, '{"n":2}', { "idempotency-key": "k-1" });
    expect(await b.json()).toMatchObject({ duplicate: true, run_id: a.run_id });
    // Without the header a request is never a duplicate.
    expect((await post(plain, '{"n":3}', {})).status).toBe(202);
    expect((await post(plain, '{"n":3}', {})).status).toBe(202);
  });
});

describe("bad webhook settings are refused on save with the field named", () => {
  const save = (config: Record<string, unknown>) => () => app.applets.create({ name: "bad", definition: { ...webhookToHttp("https://status.test/status/200"), trigger: { type: "webhook", config } } });
  test("an unknown preset, a preset without its secret, a dedupe path that cannot exist", async () => {
    await expect(save({ verify: "gitlab", hmac_secret: "x" })).rejects.toThrow(/verify/);
    await expect(save({ verify: "stripe" })).rejects.toThrow(/hmac_secret.*Stripe needs a secret/);
    await expect(save({ verify: "hmac", hmac_secret: "x" })).rejects.toThrow(/secret_header/);
    await expect(save({ dedupe_path: "data..id" })).rejects.toThrow(/dedupe_path.*empty part/);
    await expect(save({ dedupe_path: "__proto__" })).rejects.toThrow(/dedupe_path/);
    await expect(save({ dedupe_header: "X Delivery" })).rejects.toThrow(/dedupe_header/);
    await expect(save({ dedupe_header: "X-Id", dedupe_path: "id" })).rejects.toThrow(/not both/);
  });
});
