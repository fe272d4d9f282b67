import { http, HttpResponse } from "msw";
import { afterAll, beforeEach, describe, expect, test } from "vitest";
import { gotifyAction, gotifyConfigSchema } from "@/lib/actions/gotify";
import { homeAssistantAction, homeAssistantConfigSchema } from "@/lib/actions/homeassistant";
import { matrixAction, matrixConfigSchema, matrixTxnId } from "@/lib/actions/matrix";
import { checkChannel } from "@/lib/alerts/channel";
import { sendThroughChannel } from "@/lib/alerts/send";
import { createActionContext, failure, removeTempDirs, retryContext } from "../helpers/action-context";
import { createTestApp } from "../helpers/db";
import { server, useHttpMocks } from "../helpers/http";

/**
 * Home Assistant, Matrix and Gotify against stand-ins for their APIs (msw at the boundary): what
 * each sends, their refusals in the user's words with the token redacted, Matrix's transaction id
 * that makes a retried step post once, and each as an alert channel.
 */
useHttpMocks();
afterAll(removeTempDirs);

const HA = "https://home.example.com";
const HA_TOKEN = "eyJhbGciOiJIUzI1NiJ9.ha-long-lived-token";
const MATRIX = "https://matrix.example.org";
const MATRIX_TOKEN = "syt_bot_matrix_token_123";
const GOTIFY = "https://gotify.example.com";
const GOTIFY_TOKEN = "AbCdEfGhIjKlMnO";

let calls: { url: string; method: string; headers: Record<string, string>; body: unknown }[] = [];
const record = async (request: Request) => {
  const text = await request.text();
  calls.push({ url: request.url, method: request.method, headers: Object.fromEntries(request.headers), body: text ? (JSON.parse(text) as unknown) : null });
};

/** Matrix posts a transaction once per access token and txn id, as the spec says homeservers do. */
const matrixEvents = new Map<string, string>();

beforeEach(() => {
  calls = [];
  matrixEvents.clear();
  server.use(
    http.post(`${HA}/api/services/:domain/:service`, async ({ request, params }) => {
      await record(request);
      if (request.headers.get("authorization") !== `Bearer ${HA_TOKEN}`) return HttpResponse.json({ message: "Invalid authentication" }, { status: 401 });
      if (params.domain === "nope") return HttpResponse.json({ message: "Service nope.turn_on not found." }, { status: 400 });
      return HttpResponse.json([{ entity_id: "light.porch", state: "on" }]);
    }),
    http.get(`${MATRIX}/_matrix/client/v3/directory/room/:alias`, ({ params }) =>
      params.alias === "#family:example.org" ? HttpResponse.json({ room_id: "!fam:example.org", servers: ["example.org"] }) : HttpResponse.json({ errcode: "M_NOT_FOUND", error: "Room alias not found" }, { status: 404 }),
    ),
    http.put(`${MATRIX}/_matrix/client/v3/rooms/:room/send/m.room.message/:txn`, async ({ request, params }) => {
      await record(request);
      if (request.headers.get("authorization") !== `Bearer ${MATRIX_TOKEN}`) return HttpResponse.json({ errcode: "M_UNKNOWN_TOKEN", error: "Unknown access token" }, { status: 401 });
      if (params.room === "!other:example.org") return HttpResponse.json({ errcode: "M_FORBIDDEN", error: "User @bot:example.org not in room !other:example.org" }, { status: 403 });
      const key = `${String(params.room)}/${String(params.txn)}`;
      if (!matrixEvents.has(key)) matrixEvents.set(key, `$event${matrixEvents.size + 1}`);
      return HttpResponse.json({ event_id: matrixEvents.get(key) });
    }),
    http.post(`${GOTIFY}/message`, async ({ request }) => {
      await record(request);
      if (request.headers.get("x-gotify-key") !== GOTIFY_TOKEN) return HttpResponse.json({ error: "Unauthorized", errorCode: 401, errorDescription: "you need to provide a valid access token or user credentials to access this api" }, { status: 401 });
      return HttpResponse.json({ id: 77, appid: 3, message: "x" });
    }),
  );
});

describe("Home Assistant action", () => {
  const run = (config: Record<string, unknown>, ctx = createActionContext()) => homeAssistantAction.run(homeAssistantConfigSchema.parse(config), ctx);

  test("calls the service with the token and the data as JSON", async () => {
    const out = await run({ base_url: `${HA}/`, token: HA_TOKEN, service: "light.turn_on", data: { entity_id: "light.porch", brightness_pct: 80 } });
    expect(out.output).toEqual({ status: 200, service: "light.turn_on", changed_states: 1 });
    expect(calls).toMatchObject([{ url: `${HA}/api/services/light/turn_on`, method: "POST", headers: { authorization: `Bearer ${HA_TOKEN}` }, body: { entity_id: "light.porch", brightness_pct: 80 } }]);
  });

  test("a refused token says to make a new one, without the token; an unknown service names it", async () => {
    const ctx = createActionContext();
    const err = await failure(run({ base_url: HA, token: "revoked-token-value", service: "light.turn_on" }, ctx));
    expect(err.retryable).toBe(false);
    expect(err.message).toBe('homeassistant: HTTP 401 — Home Assistant refused the token; create a new long-lived access token and update the secret (Home Assistant: "Invalid authentication")');
    expect(ctx.redact(JSON.stringify(err.output))).not.toContain("revoked-token-value");
    const unknown = await failure(run({ base_url: HA, token: HA_TOKEN, service: "nope.turn_on" }));
    expect(unknown.message).toMatch(/refused the call to nope\.turn_on: "Service nope\.turn_on not found\."/);
  });

  test("a service that is not domain.service is refused on save", () => {
    expect(homeAssistantConfigSchema.safeParse({ base_url: HA, token: "t", service: "turn on the light" }).error?.issues[0]?.message).toMatch(/must be domain\.service/);
  });
});

describe("Matrix action", () => {
  const run = (config: Record<string, unknown>, ctx = createActionContext()) => matrixAction.run(matrixConfigSchema.parse(config), ctx);

  test("sends to the room with a transaction id from the idempotency key; a retry of the step posts once", async () => {
    const ctx = createActionContext();
    const first = await run({ homeserver: MATRIX, access_token: MATRIX_TOKEN, room: "!fam:example.org", text: "Door opened" }, ctx);
    const again = await run({ homeserver: MATRIX, access_token: MATRIX_TOKEN, room: "!fam:example.org", text: "Door opened" }, retryContext(ctx));
    expect(first.output).toMatchObject({ room_id: "!fam:example.org", event_id: "$event1", txn_id: matrixTxnId("event-1:0") });
    expect(again.output).toMatchObject({ event_id: "$event1" });
    expect(matrixEvents.size).toBe(1);
    expect(calls[0]).toMatchObject({ method: "PUT", body: { msgtype: "m.text", body: "Door opened" } });
    expect(calls[0]!.url).toBe(`${MATRIX}/_matrix/client/v3/rooms/!fam%3Aexample.org/send/m.room.message/${matrixTxnId("event-1:0")}`);
  });

  test("an alias is resolved to its room; a notice is sent as m.notice", async () => {
    const out = await run({ homeserver: MATRIX, access_token: MATRIX_TOKEN, room: "#family:example.org", text: "hi", notice: true });
    expect(out.output).toMatchObject({ room_id: "!fam:example.org" });
    expect(calls[0]).toMatchObject({ body: { msgtype: "m.notice" } });
  });

  test("a room the bot is not in, and a refused token, fail at once in Matrix's words", async () => {
    const forbidden = await failure(run({ homeserver: MATRIX, access_token: MATRIX_TOKEN, room: "!other:example.org", text: "x" }));
    expect(forbidden.retryable).toBe(false);
    expect(forbidden.message).toMatch(/may not post in !other:example\.org: invite it and accept the invite first \(Matrix: M_FORBIDDEN "User @bot:example\.org not in room/);
    const token = await failure(run({ homeserver: MATRIX, access_token: "syt_wrong", room: "!fam:example.org", text: "x" }));
    expect(token.message).toMatch(/the access token was refused/);
  });

  test("a room that is neither an id nor an alias is refused on save", () => {
    expect(matrixConfigSchema.safeParse({ homeserver: MATRIX, access_token: "t", room: "family", text: "x" }).error?.issues[0]?.message).toMatch(/must be a room id/);
  });
});

describe("Gotify action", () => {
  const run = (config: Record<string, unknown>, ctx = createActionContext()) => gotifyAction.run(gotifyConfigSchema.parse(config), ctx);

  test("posts the message with the application token, priority and Markdown display", async () => {
    const out = await run({ server_url: GOTIFY, app_token: GOTIFY_TOKEN, title: "Backup", message: "**done**", priority: "8", markdown: true });
    expect(out.output).toEqual({ status: 200, id: 77 });
    expect(calls[0]).toMatchObject({ headers: { "x-gotify-key": GOTIFY_TOKEN }, body: { title: "Backup", message: "**done**", priority: 8, extras: { "client::display": { contentType: "text/markdown" } } } });
  });

  test("a wrong token says where to find the right one", async () => {
    const err = await failure(run({ server_url: GOTIFY, app_token: "wrong", message: "x" }));
    expect(err.retryable).toBe(false);
    expect(err.message).toMatch(/^gotify: HTTP 401 — Gotify refused the application token \("you need to provide a valid access token/);
  });
});

describe("as alert channels", () => {
  test.each([
    ["homeassistant", { base_url: HA, token: "{{secrets.HA_TOKEN}}", service: "notify.mobile_app_pixel" }, (c: (typeof calls)[number]) => expect(c.body).toEqual({ title: "whenthen: test alert", message: expect.stringContaining("This is a test") })],
    ["matrix", { homeserver: MATRIX, access_token: "{{secrets.MATRIX_TOKEN}}", room: "!fam:example.org" }, (c: (typeof calls)[number]) => expect(c.body).toMatchObject({ body: expect.stringMatching(/^whenthen: test alert\nThis is a test/) })],
    ["gotify", { server_url: GOTIFY, app_token: "{{secrets.GOTIFY_TOKEN}}" }, (c: (typeof calls)[number]) => expect(c.body).toMatchObject({ title: "whenthen: test alert", message: expect.stringContaining("This is a test") })],
  ] as const)("%s: a channel without its message fields passes the check and sends the alert", async (type, config, check) => {
    const app = createTestApp();
    try {
      await app.secrets.set("HA_TOKEN", HA_TOKEN);
      await app.secrets.set("MATRIX_TOKEN", MATRIX_TOKEN);
      await app.secrets.set("GOTIFY_TOKEN", GOTIFY_TOKEN);
      const checked = checkChannel({ type, config }, "channel", false);
      expect(checked).toEqual({ ok: true, channel: { type, config } });
      await sendThroughChannel(app, { type, config }, { title: "whenthen: test alert", text: "This is a test of the alert channel.\nhttps://whenthen.example.com/applets/a1", link: "https://whenthen.example.com/applets/a1" }, { id: "alert-1", appletId: "a1", kind: "test" });
      expect(calls).toHaveLength(1);
      check(calls[0]!);
    } finally {
      await app.cleanup();
    }
  });
});
