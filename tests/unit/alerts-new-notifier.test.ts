import { http, HttpResponse } from "msw";
import { afterEach, describe, expect, test, vi } from "vitest";
import { dispatchAlerts } from "@/lib/alerts/dispatch";
import { channelTypes, checkChannel } from "@/lib/alerts/channel";
import { createApi } from "@/lib/api";
import { alertChannelOptions, meta } from "@/lib/api/queries";
import { checkDefinition } from "@/lib/definition";
import { testIdentity } from "../helpers/auth";
import { createTestApp, type TestApp } from "../helpers/db";
import { server, useHttpMocks } from "../helpers/http";

/**
 * Adding a notifier is one file plus one registry line: tests/helpers/pager-action.ts is the file,
 * and this mock is the line (the registry as lib/actions/index.ts builds it, with the plug-in
 * appended). Nothing else is told about it, and it is offered as an alert channel with its label
 * and fields, validated where channels are saved, filled from an alert and sent; its install fact
 * is in GET /api/meta.
 */
vi.mock("@/lib/actions", async (importOriginal) => {
  const real = await importOriginal<typeof import("@/lib/actions")>();
  const { pagerAction } = await import("../helpers/pager-action");
  const actionRegistry = real.registryOf([...real.actionRegistry.values(), pagerAction]);
  return { ...real, actionRegistry, actionFacts: (ctx: Parameters<typeof real.actionFacts>[0]) => real.actionFacts(ctx, actionRegistry) };
});

useHttpMocks();
const PAGER = "https://pager.example.com/page";
const pages: { headers: Headers; body: unknown }[] = [];
let app: TestApp | null = null;
afterEach(async () => {
  pages.length = 0;
  await app?.cleanup();
  app = null;
});

const request = (a: TestApp, method: string, path: string, body?: unknown) =>
  createApi({ app: a, applets: a.applets, auth: testIdentity(a) }).handle(
    new Request(`https://wt.example.com${path}`, { method, headers: { "content-type": "application/json", origin: "https://wt.example.com" }, body: body === undefined ? undefined : JSON.stringify(body) }),
  );

describe("a notifier added as one file plus one registry line", () => {
  test("is offered as an alert channel with its label, help and the fields a channel sets, and its install fact is in GET /api/meta", async () => {
    app = createTestApp({ env: { PUBLIC_URL: "https://wt.example.com", EMAIL_FROM: "whenthen@example.com" } });
    expect(channelTypes()).toContain("pager");
    const m = await meta(app);
    expect(m).toMatchObject({ pager_sender: "whenthen@example.com" });
    const res = await request(app, "GET", "/api/meta");
    expect(await res.json()).toMatchObject({ pager_sender: "whenthen@example.com", actions: expect.arrayContaining([expect.objectContaining({ type: "pager", label: "Page someone" })]) });
    const offered = alertChannelOptions(m).find((c) => c.type === "pager");
    expect(offered?.channel).toEqual({ label: "Pager (on call)", help: "Pages whoever is on call; every alert is critical unless the channel says info.", message_fields: ["summary"] });
    // The form shows where the alert goes; the summary is whenthen's to write.
    expect(offered?.fields.map((f) => f.name)).toEqual(["endpoint", "severity", "summary"]);
  });

  test("is validated by its own schema where channels are saved, and named among the allowed types", () => {
    expect(checkChannel({ type: "pager", config: { endpoint: PAGER } }, "channel", false)).toEqual({ ok: true, channel: { type: "pager", config: { endpoint: PAGER } } });
    const problems = (raw: unknown) => {
      const checked = checkChannel(raw, "channel", false);
      return checked.ok ? [] : checked.problems;
    };
    expect(problems({ type: "pager", config: { endpoint: PAGER, summary: "mine" } })).toEqual([{ path: "channel.config.summary", message: "summary is written by whenthen for each alert; leave it out" }]);
    expect(problems({ type: "pager", config: { endpoint: PAGER, severity: "loud" } }).map((p) => p.path)).toEqual(["channel.config.severity"]);
    expect(problems({ type: "pager", config: { endpoint: "http://127.0.0.1/page" } }).map((p) => p.path)).toEqual(["channel.config.endpoint"]);
    // An action that is not a channel is refused with the list of those that are, the new one included.
    const [refused] = problems({ type: "note", config: {} });
    expect(refused?.path).toBe("channel.type");
    expect(refused?.message).toMatch(/^type must be one of: .*\bpager\b/);
    expect(refused?.message).not.toMatch(/\bnote\b/);
    // It is an action like the others, too.
    expect(checkDefinition({ version: 1, trigger: { type: "webhook", config: {} }, actions: [{ type: "pager", config: { endpoint: PAGER, summary: "{{trigger.body.id}}" } }] }).ok).toBe(true);
  });

  test("saved through the API, a test alert is filled into its message field and sent through it", async () => {
    server.use(
      http.post(PAGER, async ({ request: r }) => {
        pages.push({ headers: r.headers, body: await r.json() });
        return HttpResponse.json({ ok: true });
      }),
    );
    app = createTestApp({ env: { PUBLIC_URL: "https://wt.example.com" } });
    const saved = await request(app, "PUT", "/api/settings/alerts", { channel: { type: "pager", config: { endpoint: PAGER, severity: "info" } } });
    expect(saved.status).toBe(200);
    expect((await app.store.alerts.settings()).channel).toEqual({ type: "pager", config: { endpoint: PAGER, severity: "info" } });
    expect((await request(app, "POST", "/api/settings/alerts/test")).status).toBe(202);
    await dispatchAlerts(app, { holder: "test" });
    expect(pages).toHaveLength(1);
    expect(pages[0]!.body).toEqual({ severity: "info", summary: expect.stringMatching(/^whenthen: .+: .+/s) });
    expect(pages[0]!.headers.get("idempotency-key")).toMatch(/^alert:/);
    const recent = (await app.store.alerts.recent(5))[0];
    expect(recent).toMatchObject({ status: "sent", channelType: "pager" });
  });
});
