import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { http, passthrough } from "msw";
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "vitest";
import { storedDefinition, topLevelActions } from "@/lib/definition";
import { createApi, type Api } from "@/lib/api";
import { createIngress } from "@/lib/http/ingress";
import { sweepPlannedRuns } from "@/lib/timed/sweep";
import { createTestApp, type TestApp } from "../helpers/db";
import { forEachEngine } from "../helpers/engines";
import { server as mocks, sentTo, useHttpMocks } from "../helpers/http";
import { startWorker } from "../helpers/worker";
import { testIdentity } from "../helpers/auth";

useHttpMocks();
// The test's own requests to the local ingress go out for real; the actions' go to the mocks.
beforeEach(() => mocks.use(http.all(/^http:\/\/127\.0\.0\.1:\d+\//, () => passthrough())));

/** The README's booking example: a reminder 24 h before the booking, moved by a reschedule, cancelled by a cancellation. */
const bookingApplet = (extra: { actions?: unknown[]; timed?: Record<string, unknown> } = {}) => ({
  version: 1,
  trigger: { type: "webhook", config: {} },
  timezone: "America/Mexico_City",
  actions: extra.actions ?? [
    {
      type: "http",
      config: { url: "https://status.test/status/200", method: "POST", body: { reminder: "{{trigger.body.booking.id}}", starts_at: "{{trigger.body.booking.starts_at}}" } },
      timing: { at: "-24h", anchor: "trigger.body.booking.starts_at" },
    },
  ],
  timed: {
    subject: { id: "{{trigger.body.booking.id}}", version: "{{trigger.body.booking.version}}", type: "booking" },
    supersede: { path: "trigger.body.event", values: ["booking.rescheduled", "booking.cancelled"], cancel_values: ["booking.cancelled"] },
    ...extra.timed,
  },
});

forEachEngine((engine) => {
  let app: TestApp;
  let server: Server;
  let base: string;
  let api: Api;
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await api.handle(
      new Request(`http://localhost:3000${path}`, { method, headers: body === undefined ? {} : { "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) }),
    );
    return { status: res.status, body: (await res.json()) as Record<string, unknown> & { items?: Record<string, unknown>[] } };
  };

  beforeAll(async () => {
    app = createTestApp({ engine, start: "2026-03-07T12:00:00.000Z" });
    api = createApi({ app, applets: app.applets, auth: testIdentity(app) });
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

  const post = async (applet: { id: string; webhookToken: string }, body: unknown) => {
    const res = await fetch(`${base}/api/hooks/${applet.id}/${applet.webhookToken}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    expect(res.status).toBe(202);
    return (await res.json()) as { run_id: string; event_id: string };
  };
  const booking = (event: string, version: number, startsAt: string, more: Record<string, unknown> = {}) => ({ event, booking: { id: "bk-1", version, starts_at: startsAt }, ...more });
  const planned = async (appletId: string) => (await app.store.plannedRuns.list(appletId, { limit: 50 })).map((r) => ({ v: r.subjectVersion, status: r.status, reason: r.reason, due: new Date(r.dueAt).toISOString() }));

  describe("timed actions through the webhook", () => {
    test("booking created → reminder planned 24 h before; rescheduled → old cancelled superseded, new planned; cancelled → nothing pending; a redelivered created after → nothing", async () => {
      const applet = await app.applets.create({ name: "booking reminder", definition: bookingApplet() });
      // created: 2026-03-10 15:00 in Mexico City (UTC-6) → due 2026-03-09 21:00 UTC.
      await post(applet, booking("booking.created", 1, "2026-03-10T15:00:00-06:00"));
      expect(await planned(applet.id)).toEqual([{ v: 1, status: "pending", reason: null, due: "2026-03-09T21:00:00.000Z" }]);
      const [first] = await app.store.plannedRuns.list(applet.id, { limit: 5 });
      expect(await app.store.runs.get(first!.id)).toMatchObject({ status: "planned", plannedRunId: first!.id, actionIndex: 0, dueAt: "2026-03-09T21:00:00.000Z" });
      expect(first!.note).toBe("would run at 2026-03-09 15:00 in America/Mexico_City");

      // rescheduled to a day later (version 2): the old plan goes, the new one comes, in the event's transaction.
      await post(applet, booking("booking.rescheduled", 2, "2026-03-11T15:00:00-06:00"));
      expect(await planned(applet.id)).toEqual([
        { v: 1, status: "cancelled", reason: "superseded", due: "2026-03-09T21:00:00.000Z" },
        { v: 2, status: "pending", reason: null, due: "2026-03-10T21:00:00.000Z" },
      ]);
      expect(await app.store.runs.get(first!.id)).toMatchObject({ status: "cancelled", reason: "superseded" });

      // cancelled (version 3): cancels, plans nothing.
      await post(applet, booking("booking.cancelled", 3, "2026-03-11T15:00:00-06:00"));
      expect((await planned(applet.id)).filter((r) => r.status === "pending")).toEqual([]);

      // The created webhook delivered again after all that: refused (older version), nothing planned.
      await post(applet, booking("booking.created", 1, "2026-03-10T15:00:00-06:00"));
      expect(await planned(applet.id)).toEqual([
        { v: 1, status: "cancelled", reason: "superseded", due: "2026-03-09T21:00:00.000Z" },
        { v: 2, status: "cancelled", reason: "superseded", due: "2026-03-10T21:00:00.000Z" },
      ]);
      const cancelled = await app.store.runs.list({ appletId: applet.id, status: "cancelled", reason: "superseded" });
      expect(cancelled.runs).toHaveLength(2);
      // Nothing is ever sent: a sweep after both due times finds nothing to do.
      app.clock.set("2026-03-11T00:00:00.000Z");
      expect((await sweepPlannedRuns({ app })).claimed).toBe(0);
      app.clock.set("2026-03-07T12:00:00.000Z");
    });

    test("a due reminder is swept and executed once by the executor, its idempotency key the planned run's id; the event's own run runs only the untimed action", async () => {
      const applet = await app.applets.create({
        name: "mixed",
        definition: bookingApplet({
          actions: [
            { type: "http", config: { url: "https://status.test/status/201", method: "POST", body: { now: "{{trigger.body.booking.id}}" } } },
            { type: "http", config: { url: "https://status.test/status/200", method: "POST", body: { reminder: "{{trigger.body.booking.id}}" } }, timing: { at: "-24h", anchor: "trigger.body.booking.starts_at" } },
          ],
        }),
      });
      const worker = startWorker(app);
      try {
        const { run_id } = await post(applet, { event: "booking.created", booking: { id: "bk-2", version: 1, starts_at: "2026-03-08T18:00:00Z" } });
        await worker.drain();
        expect(await app.store.runs.get(run_id)).toMatchObject({ status: "succeeded" });
        expect((await app.store.runs.get(run_id))!.steps.map((s) => s.index)).toEqual([0]);
        expect(sentTo("status").map((r) => new URL(r.url).pathname)).toEqual(["/status/201"]);
        // Not yet due: nothing to sweep.
        expect((await sweepPlannedRuns({ app })).claimed).toBe(0);
        app.clock.set("2026-03-07T18:00:30.000Z");
        expect(await sweepPlannedRuns({ app })).toMatchObject({ claimed: 1, done: 1 });
        await worker.drain();
        const [p] = await app.store.plannedRuns.list(applet.id, { limit: 5 });
        const timed = (await app.store.runs.get(p!.id))!;
        expect(timed).toMatchObject({ status: "succeeded", plannedRunId: p!.id, actionIndex: 1 });
        expect(timed.steps.map((s) => s.index)).toEqual([1]);
        const reminder = sentTo("status").filter((r) => r.url.endsWith("/status/200"));
        expect(reminder).toHaveLength(1);
        expect(reminder[0]!.headers["idempotency-key"]).toBe(p!.id);
        expect(p!.status).toBe("done");
        // A sweep again changes nothing.
        expect((await sweepPlannedRuns({ app })).claimed).toBe(0);
      } finally {
        await worker.stop();
        app.clock.set("2026-03-07T12:00:00.000Z");
      }
    });

    test("quiet hours on the contact's clock move a follow-up on the night New York's clocks go forward (02:30 does not exist: 03:30)", async () => {
      const applet = await app.applets.create({
        name: "dst",
        definition: bookingApplet({
          actions: [{ type: "http", config: { url: "https://status.test/status/200", method: "POST", body: {} }, timing: { at: "1h", anchor: "trigger.body.booking.starts_at" } }],
          timed: { contact: { id: "{{trigger.body.contact.id}}", timezone: "{{trigger.body.contact.tz}}" }, quiet_hours: { start: "22:00", end: "02:30" } },
        }),
      });
      // 22:30 EST on 2026-03-07 + 1 h = 23:30, inside 22:00-02:30; that night 02:00 EST becomes 03:00 EDT.
      await post(applet, { event: "booking.created", booking: { id: "bk-dst", version: 1, starts_at: "2026-03-07T22:30:00-05:00" }, contact: { id: "c-ny", tz: "America/New_York" } });
      const [p] = await app.store.plannedRuns.list(applet.id, { limit: 5 });
      expect(new Date(p!.dueAt).toISOString()).toBe("2026-03-08T07:30:00.000Z"); // 03:30 EDT
      expect(new Date(p!.originalDueAt!).toISOString()).toBe("2026-03-08T04:30:00.000Z"); // 23:30 EST
      expect(p!.note).toBe("would run at 2026-03-08 03:30 in America/New_York, moved from 23:30 by quiet hours");
      // Without a zone in the payload the applet's (Mexico City, UTC-6, no DST) is used: 22:30 there, moved to 02:30.
      await post(applet, { event: "booking.created", booking: { id: "bk-mx", version: 1, starts_at: "2026-03-07T22:30:00-05:00" }, contact: { id: "c-mx" } });
      const mx = (await app.store.plannedRuns.list(applet.id, { limit: 5 })).find((r) => r.subjectId === "bk-mx")!;
      expect(new Date(mx.dueAt).toISOString()).toBe("2026-03-08T08:30:00.000Z"); // 02:30 in Mexico City (UTC-6)
      expect(mx.note).toMatch(/in America\/Mexico_City, moved from 22:30 by quiet hours$/);
    });

    test("a frequency cap of 1 a day per contact skips the second reminder (frequency_cap) at send time", async () => {
      const applet = await app.applets.create({
        name: "cap",
        definition: bookingApplet({ timed: { contact: { id: "{{trigger.body.contact.id}}" }, frequency_cap: { max: 1, per: "1d" } } }),
      });
      for (const [id, starts] of [["bk-c1", "2026-03-08T15:30:00Z"], ["bk-c2", "2026-03-08T16:00:00Z"]]) {
        await post(applet, { event: "booking.created", booking: { id, version: 1, starts_at: starts }, contact: { id: "c-cap" } });
      }
      // Both due (15:30 and 16:00), both within their hour of lateness.
      app.clock.set("2026-03-07T16:05:00.000Z");
      try {
        const report = await sweepPlannedRuns({ app });
        const rows = await app.store.plannedRuns.list(applet.id, { limit: 5 });
        expect(report).toMatchObject({ claimed: 2, done: 1, skipped: 1 });
        expect(rows.map((r) => [r.subjectId, r.status, r.reason])).toEqual([
          ["bk-c1", "done", null],
          ["bk-c2", "skipped", "frequency_cap"],
        ]);
        expect(await app.store.runs.get(rows[1]!.id)).toMatchObject({ status: "skipped", reason: "frequency_cap" });
      } finally {
        app.clock.set("2026-03-07T12:00:00.000Z");
      }
    });

    test("bad anchors are stored as skipped no_anchor with the path and the value; a time already past its lateness window is skipped late; a disabled applet's run rule_disabled; a moved anchor stale", async () => {
      const applet = await app.applets.create({
        name: "bad input",
        definition: bookingApplet({ timed: { supersede: { path: "trigger.body.event", values: ["booking.rescheduled"] } } }),
      });
      await post(applet, booking("booking.created", 1, "2026-03-10 15:00").booking && { event: "booking.created", booking: { id: "bk-z", version: 1, starts_at: "2026-03-10 15:00" } });
      await post(applet, { event: "booking.created", booking: { id: "bk-m", version: 1 } });
      await post(applet, { event: "booking.created", booking: { id: "bk-n", version: 1, starts_at: "soon" } });
      // Due 2026-03-06 12:00, a day ago: past the 1 h window.
      await post(applet, { event: "booking.created", booking: { id: "bk-l", version: 1, starts_at: "2026-03-07T12:00:00Z" } });
      const rows = await app.store.plannedRuns.list(applet.id, { limit: 10 });
      const by = (id: string) => rows.find((r) => r.subjectId === id)!;
      expect(by("bk-z")).toMatchObject({ status: "skipped", reason: "no_anchor" });
      expect(by("bk-z").note).toBe('no anchor: trigger.body.booking.starts_at is "2026-03-10 15:00", a time without a zone (add Z or an offset such as -06:00)');
      expect(by("bk-m").note).toBe("no anchor: trigger.body.booking.starts_at is missing");
      expect(by("bk-n").note).toBe('no anchor: trigger.body.booking.starts_at is "soon", not a time');
      expect(await app.store.runs.get(by("bk-m").id)).toMatchObject({ status: "skipped", reason: "no_anchor", error: "no anchor: trigger.body.booking.starts_at is missing" });
      expect(by("bk-l")).toMatchObject({ status: "skipped", reason: "late" });

      // A booking.updated (not superseding) moves the anchor: the version-1 plan stays pending, and is stale at send time.
      await post(applet, { event: "booking.created", booking: { id: "bk-s", version: 1, starts_at: "2026-03-08T13:00:00Z" } });
      await post(applet, { event: "booking.updated", booking: { id: "bk-s", version: 2, starts_at: "2026-03-08T20:00:00Z" } });
      // And one for the disabled check.
      await post(applet, { event: "booking.created", booking: { id: "bk-d", version: 1, starts_at: "2026-03-08T13:30:00Z" } });
      app.clock.set("2026-03-07T13:10:00.000Z");
      try {
        expect(await sweepPlannedRuns({ app })).toMatchObject({ claimed: 1, skipped: 1 });
        const s1 = (await app.store.plannedRuns.list(applet.id, { limit: 20 })).find((r) => r.subjectId === "bk-s" && r.subjectVersion === 1)!;
        expect(await app.store.runs.get(s1.id)).toMatchObject({ status: "skipped", reason: "stale" });
        await app.applets.setEnabled(applet.id, false);
        app.clock.set("2026-03-07T13:40:00.000Z");
        expect(await sweepPlannedRuns({ app })).toMatchObject({ claimed: 1, skipped: 1 });
        expect((await app.store.plannedRuns.list(applet.id, { limit: 20 })).find((r) => r.subjectId === "bk-d")).toMatchObject({ status: "skipped", reason: "rule_disabled" });
      } finally {
        app.clock.set("2026-03-07T12:00:00.000Z");
      }
    });

    test("the API: planned runs of an applet, /api/runs status and reason filters, a pure timing preview, a bad offset refused with the field named, export/import carries the timing", async () => {
      const created = await call("POST", "/api/applets", { name: "api booking", definition: bookingApplet() });
      expect(created.status).toBe(201);
      const applet = (created.body as { applet: { id: string; webhookToken?: string; webhook_token?: string } }).applet;
      const stored = (await app.store.applets.get(applet.id))!;
      await post(stored, { event: "booking.created", booking: { id: "bk-api", version: 1, starts_at: "2026-03-10T15:00:00-06:00" } });
      await post(stored, { event: "booking.rescheduled", booking: { id: "bk-api", version: 2, starts_at: "2026-03-10T17:00:00-06:00" } });

      const pending = await call("GET", `/api/applets/${applet.id}/planned?status=pending`);
      expect(pending.status).toBe(200);
      expect(pending.body.items).toEqual([
        expect.objectContaining({ actionIndex: 0, actionType: "http", dueAt: "2026-03-09T23:00:00.000Z", status: "pending", reason: null, originalDueAt: null, subjectId: "bk-api", subjectVersion: 2, explanation: "would run at 2026-03-09 17:00 in America/Mexico_City" }),
      ]);
      expect(pending.body.items![0]!.runId).toBe(pending.body.items![0]!.id);
      expect((await call("GET", `/api/applets/${applet.id}/planned`)).body.items).toHaveLength(2);
      expect(await call("GET", `/api/applets/${applet.id}/planned?status=later`)).toMatchObject({ status: 400, body: { problems: [{ path: "status" }] } });
      expect((await call("GET", "/api/applets/nothing-here/planned")).status).toBe(404);

      const planned = await call("GET", `/api/runs?applet_id=${applet.id}&status=planned`);
      expect((planned.body.runs as Record<string, unknown>[]).map((r) => [r.status, r.dueAt, r.plannedRunId === r.id, r.actionIndex])).toEqual([["planned", "2026-03-09T23:00:00.000Z", true, 0]]);
      const superseded = await call("GET", `/api/runs?applet_id=${applet.id}&status=cancelled&reason=superseded`);
      expect((superseded.body.runs as Record<string, unknown>[]).map((r) => r.reason)).toEqual(["superseded"]);

      // The preview plans with the library, purely: nothing is stored.
      const before = Number((await app.sql.get<{ n: number }>("SELECT COUNT(*) AS n FROM planned_runs"))!.n);
      const preview = await call("POST", "/api/applets/timing-preview", {
        definition: bookingApplet({ timed: { quiet_hours: { start: "21:00", end: "08:00" } }, actions: [
          { type: "http", config: { url: "https://status.test/status/200" } },
          { type: "http", config: { url: "https://status.test/status/200" }, timing: { at: "-24h", anchor: "trigger.body.booking.starts_at" } },
          { type: "http", config: { url: "https://status.test/status/200" }, timing: { at: "1h", anchor: "trigger.body.booking.ends_at" } },
        ] }),
        sample: { body: { event: "booking.created", booking: { id: "x", version: 1, starts_at: "2026-10-12T22:00:00-06:00" } } },
      });
      expect(preview.status).toBe(200);
      expect(preview.body.items).toEqual([
        { actionIndex: 1, dueAt: "2026-10-12T14:00:00.000Z", originalDueAt: "2026-10-12T04:00:00.000Z", timezone: "America/Mexico_City", status: "pending", reason: null, explanation: "would run at 2026-10-12 08:00 in America/Mexico_City, moved from 22:00 by quiet hours" },
        { actionIndex: 2, dueAt: null, originalDueAt: null, timezone: "America/Mexico_City", status: "skipped", reason: "no_anchor", explanation: "no anchor: trigger.body.booking.ends_at is missing" },
      ]);
      expect(Number((await app.sql.get<{ n: number }>("SELECT COUNT(*) AS n FROM planned_runs"))!.n)).toBe(before);

      // An offset that does not parse is refused on save with the field named; nothing is stored.
      const bad = bookingApplet();
      (bad.actions[0] as { timing: { at: string } }).timing.at = "a day before";
      const refused = await call("POST", "/api/applets", { name: "bad", definition: bad });
      expect(refused.status).toBe(400);
      expect((refused.body.problems as { path: string }[]).map((p) => p.path)).toEqual(["definition.actions.0.timing.at"]);

      // Export (version 2) carries timing and timed (import reads definitions through the same checkDefinition).
      const exported = await call("GET", "/api/export");
      const mine = (exported.body as unknown as { name: string; definition: Record<string, unknown> }[]).find((a) => a.name === "api booking")!;
      expect(mine.definition.timed).toEqual(bookingApplet().timed);
      expect(mine.definition.version).toBe(2);
      expect(topLevelActions(storedDefinition(mine.definition))[0]!.timing).toEqual({ at: "-24h", anchor: "trigger.body.booking.starts_at" });
    });

    test("conditions decide whether an event plans its timed actions (trigger. paths read the ingredients, all and any); the preview says why nothing is planned; a condition that does not parse is refused on save with its field named", async () => {
      const conditions = {
        all: [{ field: "trigger.body.booking.status", op: "eq", value: "confirmed" }],
        any: [
          { field: "trigger.body.booking.kind", op: "in", value: ["visit", "call"] },
          { field: "event.type", op: "eq", value: "booking.vip" },
        ],
      };
      const applet = await app.applets.create({ name: "confirmed visits only", definition: bookingApplet({ timed: { conditions } }) });
      const at = "2026-03-12T15:00:00-06:00";
      // Not confirmed: nothing planned. Confirmed but neither a visit/call nor a VIP event: nothing.
      await post(applet, { event: "booking.created", booking: { id: "c-1", version: 1, starts_at: at, status: "tentative", kind: "visit" } });
      await post(applet, { event: "booking.created", booking: { id: "c-2", version: 1, starts_at: at, status: "confirmed", kind: "walk-in" } });
      expect(await planned(applet.id)).toEqual([]);
      // Confirmed and a visit: planned; a confirmed walk-in sent as a VIP event: planned too (any).
      await post(applet, { event: "booking.created", booking: { id: "c-3", version: 1, starts_at: at, status: "confirmed", kind: "visit" } });
      await post(applet, { event: "booking.vip", booking: { id: "c-4", version: 1, starts_at: at, status: "confirmed", kind: "walk-in" } });
      expect((await planned(applet.id)).map((r) => r.status)).toEqual(["pending", "pending"]);
      expect(new Set((await app.store.plannedRuns.list(applet.id, { limit: 10 })).map((r) => r.subjectId))).toEqual(new Set(["c-3", "c-4"]));
      // Export carries them.
      const exported = await call("GET", "/api/export");
      expect((exported.body as unknown as { name: string; definition: { timed: unknown } }[]).find((a) => a.name === "confirmed visits only")!.definition.timed).toMatchObject({ conditions });

      // The preview against a sample they reject plans nothing and says so.
      const preview = await call("POST", "/api/applets/timing-preview", {
        definition: bookingApplet({ timed: { conditions } }),
        sample: { body: { event: "booking.created", booking: { id: "x", version: 1, starts_at: at, status: "tentative" } } },
      });
      expect(preview.status).toBe(200);
      expect(preview.body.items).toEqual([]);
      expect(preview.body.warnings).toContain("timed: the conditions do not hold for this event, so its timed actions are not planned");

      // Refused on save, each with its field: a path outside the ingredients, an unknown test, a list test without a list.
      const refused = await call("POST", "/api/applets", {
        name: "bad conditions",
        definition: bookingApplet({
          timed: {
            conditions: {
              all: [
                { field: "body.status", op: "eq", value: "x" },
                { field: "trigger.body.status", op: "equals", value: "x" },
                { field: "trigger.body.kind", op: "in", value: "visit" },
              ],
            },
          },
        }),
      });
      expect(refused.status).toBe(400);
      const paths = (refused.body.problems as { path: string }[]).map((p) => p.path);
      expect(paths).toContain("definition.timed.conditions.all.0.field");
      expect(paths).toContain("definition.timed.conditions.all.1.op");
      expect(await app.store.applets.list().then((all) => all.some((a) => a.name === "bad conditions"))).toBe(false);
      const listNeeded = await call("POST", "/api/applets", {
        name: "bad conditions",
        definition: bookingApplet({ timed: { conditions: { all: [{ field: "trigger.body.kind", op: "in", value: "visit" }] } } }),
      });
      expect(listNeeded.status).toBe(400);
      expect((listNeeded.body.problems as { path: string }[]).map((p) => p.path)).toEqual(["definition.timed.conditions.all.0.value"]);
    });
  });
});
