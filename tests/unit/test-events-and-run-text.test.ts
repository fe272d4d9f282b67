import { describe, expect, it } from "vitest";
import { getTrigger } from "@/lib/triggers";
import { TEST_EVENT_USER_AGENT, freshTestPayload, parseSample, webhookCurl } from "@/lib/ui/sample";
import { ingredientGroups } from "@/lib/ui/format";
import type { MetaTrigger } from "@/lib/api/queries";

/** The pure parts: what the screens compute before they show or send anything. */

describe("test events and samples", () => {
  const webhookSample = getTrigger("webhook").sample;

  it("Send test event stamps the sample's received_at and user-agent with this send", () => {
    const now = new Date("2026-12-01T10:14:00.000Z");
    const sent = freshTestPayload(structuredClone(webhookSample), webhookSample, now);
    expect(sent.received_at).toBe("2026-12-01T10:14:00.000Z");
    expect((sent.headers as Record<string, string>)["user-agent"]).toBe(TEST_EVENT_USER_AGENT);
    // The rest is the sample as it was.
    expect(sent.body).toEqual(webhookSample.body);
    expect((sent.headers as Record<string, string>)["content-type"]).toBe("application/json");
  });

  it("what the user typed in is sent as typed", () => {
    const typed = { ...webhookSample, received_at: "2025-01-01T00:00:00.000Z", headers: { "user-agent": "Stripe/1.0" } };
    const sent = freshTestPayload(typed, webhookSample, new Date("2026-12-01T10:14:00.000Z"));
    expect(sent.received_at).toBe("2025-01-01T00:00:00.000Z");
    expect((sent.headers as Record<string, string>)["user-agent"]).toBe("Stripe/1.0");
  });

  it("the ingredient picker offers the fields of the edited sample, not only the built-in one's", () => {
    const t = getTrigger("webhook");
    const trigger = { type: t.type, label: t.label, ingredients: t.ingredients, sample: t.sample } as unknown as MetaTrigger;
    const edited = { ...t.sample, body: { order: { amount: 59.9, items: [{ sku: "A-1" }] } }, tenant: "acme" };
    const labels = ingredientGroups({ trigger, sample: edited, secrets: [] })[0]!.options.map((o) => o.label);
    expect(labels).toEqual(expect.arrayContaining(["trigger.body", "trigger.body.order.amount", "trigger.body.order.items[0].sku", "trigger.tenant"]));
    // The built-in sample's own fields went with its body; the declared ingredients stay.
    const builtinBody = ingredientGroups({ trigger, secrets: [] })[0]!.options.map((o) => o.label).filter((l) => l.startsWith("trigger.body."));
    expect(builtinBody.length).toBeGreaterThan(0);
    for (const l of builtinBody) expect(labels).not.toContain(l);
    for (const ing of t.ingredients) expect(labels).toContain(`trigger.${ing.name}`);
  });

  it("the applet page's curl line sends the body of the sample in use", () => {
    expect(webhookCurl("https://w.test/api/hooks/a/t", { body: { amount: 59.9, note: "it's" } })).toBe(
      `curl -X POST 'https://w.test/api/hooks/a/t' -H 'content-type: application/json' -d '{"amount":59.9,"note":"it'\\''s"}'`,
    );
    expect(webhookCurl("https://w.test/h", {})).toContain(`-d '{"hello":"world"}'`);
  });

  it("a typed sample must be a JSON object, and the message says why", () => {
    expect(parseSample('{"title": "x"}')).toEqual({ ok: true, value: { title: "x" } });
    expect(parseSample("[1]")).toMatchObject({ ok: false, error: expect.stringContaining("JSON object") });
    expect(parseSample("{title: 1}")).toMatchObject({ ok: false, error: expect.stringMatching(/^Not valid JSON/) });
  });
});

describe("how runs read", () => {
  it("a run waiting for its next attempt reads 'retrying: attempt 3 of 5 pending at 10:14', not 'queued' (the attempt has not run yet)", async () => {
    const { retryLabel } = await import("@/lib/ui/run-timing");
    const waiting = { status: "retrying" as const, attempt: 3, max_attempts: 5, next_attempt_at: "2026-12-01T09:14:00.000Z" };
    expect(retryLabel(waiting, (iso) => new Date(iso).toLocaleTimeString("en-GB", { hour: "2-digit", minute: "2-digit", timeZone: "Europe/Berlin" }))).toBe("retrying: attempt 3 of 5 pending at 10:14");
    // A stored row (status queued, attempt > 1) reads the same.
    expect(retryLabel({ ...waiting, status: "queued" }, () => "10:14")).toBe("retrying: attempt 3 of 5 pending at 10:14");
    // A fresh run in line is just queued.
    expect(retryLabel({ ...waiting, status: "queued", attempt: 1 }, () => "x")).toBeNull();
  });

  it("a dead run's start and duration span all its attempts, not the last one", async () => {
    const { runSpan } = await import("@/lib/ui/run-timing");
    const run = {
      attempt: 5,
      created_at: "2026-12-01T08:00:00.000Z",
      started_at: "2026-12-01T11:00:00.000Z",
      finished_at: "2026-12-01T11:00:02.000Z",
      steps: [{ started_at: "2026-12-01T11:00:00.500Z", previous_errors: [{ attempt: 1, error: "500", at: "2026-12-01T08:00:01.000Z" }, { attempt: 4, error: "500", at: "2026-12-01T10:00:00.000Z" }] }],
    };
    const span = runSpan(run);
    expect(span.lastAttemptMs).toBe(2000);
    expect(span.firstStart).toBe("2026-12-01T08:00:01.000Z");
    expect(span.totalMs).toBe(3 * 3_600_000 + 1000);
    // With no step history, the first attempt began when the run was made.
    expect(runSpan({ ...run, steps: [] }).firstStart).toBe("2026-12-01T08:00:00.000Z");
  });

  it("the 'may have run twice' banner is for crash re-runs only", async () => {
    const { reranAfterCrash } = await import("@/lib/ui/run-timing");
    expect(reranAfterCrash([{}, {}])).toBe(false);
    expect(reranAfterCrash([{}, { rerun: true }])).toBe(true);
  });

  it("the runs filter's days are the reader's days", async () => {
    const { dayBounds } = await import("@/lib/ui/run-timing");
    expect(dayBounds("2026-12-01", "2026-12-01", "Europe/Berlin")).toEqual({ from: "2026-11-30T23:00:00.000Z", to: "2026-12-01T22:59:59.999Z" });
    expect(dayBounds("2026-12-01", undefined, "Not/AZone")).toEqual({ from: "2026-12-01T00:00:00.000Z", to: undefined });
  });
});

describe("small things a new user trips on", () => {
  it("the filter code placeholder uses the trigger's own fields", async () => {
    const { filterPlaceholder } = await import("@/lib/ui/format");
    expect(filterPlaceholder(getTrigger("webhook").sample)).toContain("trigger.body.title");
    expect(filterPlaceholder(getTrigger("rss").sample)).toContain("trigger.title");
    expect(filterPlaceholder(getTrigger("email").sample)).toContain("trigger.subject");
    const poll = filterPlaceholder(getTrigger("poll").sample);
    expect(poll).not.toContain("trigger.body");
    expect(poll).toContain("trigger.value");
  });

  it("'Fetch now' says how many it lists, not 'the first three' of two", async () => {
    const { fetchedItemsSummary } = await import("@/lib/ui/format");
    expect(fetchedItemsSummary(2, 2)).toBe("2 items in the feed:");
    expect(fetchedItemsSummary(10, 3)).toBe("10 items in the feed; the first 3:");
    expect(fetchedItemsSummary(0, 0)).toBe("0 items in the feed.");
  });

  it("a secret's name breaks only after _ or ., never mid-word", async () => {
    const { tokenBreaks } = await import("@/lib/ui/format");
    expect(tokenBreaks("SLACK_WEBHOOK_OPS")).toEqual(["SLACK_", "WEBHOOK_", "OPS"]);
    expect(tokenBreaks("{{secrets.TEMP_TOKEN}}").join("")).toBe("{{secrets.TEMP_TOKEN}}");
  });
});

describe("save problems in the form's words", () => {
  it("a Slack webhook URL left empty reads “Action 1 (Slack message) › Webhook URL: Webhook URL is empty…”, not a config path", async () => {
    const { wordProblem } = await import("@/components/editor/problems");
    const { draftFromDefinition } = await import("@/components/editor/draft");
    const { actionRegistry } = await import("@/lib/actions");
    const { triggerRegistry } = await import("@/lib/triggers");
    const catalog = {
      triggers: [...triggerRegistry.values()].map((t) => ({ type: t.type, label: t.label, description: t.description, fields: t.fields, ingredients: t.ingredients, sample: t.sample, can_fetch: false, fetch_label: "Fetch now" })),
      actions: [...actionRegistry.values()].map((a) => ({ type: a.type, label: a.label, description: a.description, fields: a.fields, available: true })),
    };
    const draft = draftFromDefinition(catalog, { name: "x", definition: { version: 1, trigger: { type: "webhook", config: {} }, actions: [{ type: "slack", config: { webhook_url: "", text: "hi" } }] } });
    const worded = wordProblem(catalog, draft, { path: "definition.actions.0.config.webhook_url", message: 'slack: "webhook_url" is empty; it is required' });
    expect(worded.where).toBe("Action 1 (Slack message) › Webhook URL");
    expect(worded.message).toBe("Webhook URL is empty; it is required");
    expect(wordProblem(catalog, draft, { path: "name", message: "required" }).where).toBe("Name");
  });
});

describe("managing many applets", () => {
  const applet = (i: number, extra: Partial<import("@/lib/ui/applet-list").ListedApplet> = {}) => ({
    id: `a${String(i).padStart(4, "0")}`,
    name: `Applet ${String(i).padStart(4, "0")}`,
    enabled: i % 2 === 0,
    triggerType: i % 3 === 0 ? "rss" : "webhook",
    createdAt: new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString(),
    lastStatus: null,
    lastAt: null,
    triggerError: null,
    ...extra,
  });

  it("1,000 applets are searched by name, filtered by trigger, status and 'needs attention', sorted and paged 50 at a time", async () => {
    const { listApplets, APPLETS_PAGE_SIZE } = await import("@/lib/ui/applet-list");
    const all = Array.from({ length: 1000 }, (_, i) => applet(i, i === 7 ? { lastStatus: "dead" } : i === 9 ? { triggerError: "rss: HTTP 404" } : {}));
    const first = listApplets(all, {});
    expect(first.items).toHaveLength(APPLETS_PAGE_SIZE);
    expect(first.pages).toBe(20);
    expect(listApplets(all, { q: "applet 0042" }).items.map((a) => a.id)).toEqual(["a0042"]);
    expect(listApplets(all, { trigger: "rss", status: "enabled" }).total).toBe(all.filter((a) => a.triggerType === "rss" && a.enabled).length);
    expect(listApplets(all, { status: "attention" }).items.map((a) => a.id)).toEqual(["a0007", "a0009"]);
    expect(listApplets(all, { sort: "created" }).items[0]!.id).toBe("a0999");
    expect(listApplets(all, { page: 99 }).page).toBe(20);
  });
});
