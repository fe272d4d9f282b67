import { mkdirSync, readFileSync, writeFileSync, existsSync } from "node:fs";
import path from "node:path";
import { http, HttpResponse } from "msw";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { createApi } from "@/lib/api";
import { testIdentity } from "../helpers/auth";
import { runRetention } from "@/lib/tick/retention";
import { reconcileDue, runSchedulerTick } from "@/lib/tick/tick";
import { captureLog, createTestApp, eventsOf as storedEventsOf, runsOf as storedRunsOf, type TestApp } from "../helpers/db";
import { server, useHttpMocks } from "../helpers/http";
import { forEachEngine } from "../helpers/engines";

useHttpMocks();

const FEEDS = path.resolve(__dirname, "../../fixtures/feeds");
const POLL = path.resolve(__dirname, "../../fixtures/poll");
const readFeed = (name: string) => readFileSync(path.join(FEEDS, name), "utf8");
const HOOK = "https://hooks.example.test/sink";
const MIN = 60_000;

/** rss.xml without its `drop` newest items (feeds list newest first). */
function withoutNewest(xml: string, drop: number): string {
  let out = xml;
  for (let i = 0; i < drop; i++) out = out.replace(/\s*<item>[\s\S]*?<\/item>/, "");
  return out;
}

forEachEngine((engine) => {
  let app: TestApp;
  let extraApps: TestApp[] = [];
  beforeEach(() => {
    app = createTestApp({ start: "2026-03-07T12:00:00.000Z", engine });
    extraApps = [];
  });
  afterEach(() => {
    for (const a of extraApps) void a.cleanup();
    void app.cleanup();
  });

  const definition = (trigger: { type: string; config: Record<string, unknown> }) => ({
    version: 1,
    trigger,
    actions: [{ type: "http", config: { url: HOOK, method: "POST", body: { item: "{{trigger.title}}" } } }],
  });

  const createApplet = async (a: TestApp, name: string, trigger: { type: string; config: Record<string, unknown> }) =>
    (await a.applets.create({ name, definition: definition(trigger) }));

  /** Events of an applet in insertion order, with their payloads parsed, as the assertions below name their columns. */
  async function eventsOf(a: TestApp, appletId: string) {
    return (await storedEventsOf(a.store, appletId)).map((e) => ({ id: e.id, applet_id: e.appletId, dedupe_key: e.dedupeKey, payload: e.payload, source: e.source }));
  }

  /** Runs of an applet in insertion order. */
  async function runsOf(a: TestApp, appletId: string) {
    return (await storedRunsOf(a.store, appletId)).map((r) => ({ id: r.id, event_id: r.eventId, status: r.status }));
  }

  const stateOf = async (a: TestApp, appletId: string) => (await a.store.triggerState.get(appletId))!;

  const tick = (a: TestApp = app) => runSchedulerTick(a, a.clock.now(), { holder: "test-worker" });

  describe("AC3: schedule applets", () => {
    test("AC3: after 3 hours of downtime spanning one fire time, the tick creates exactly one event, a second tick none, and next_run_at moves to the next day", async () => {
      const applet = await createApplet(app, "Morning report", { type: "schedule", config: { cron: "0 9 * * *", timezone: "America/New_York" } });
      expect((await stateOf(app, applet.id)).nextRunAt).toBe("2026-03-07T14:00:00.000Z");

      app.clock.set("2026-03-07T17:00:00.000Z");
      const first = await tick();
      expect(first).toMatchObject({ ran: true, events: 1, fired: [applet.id] });
      const events = await eventsOf(app, applet.id);
      expect(events).toHaveLength(1);
      expect(events[0]).toMatchObject({
        source: "schedule",
        dedupe_key: "2026-03-07T14:00:00.000Z",
        payload: { fired_at: "2026-03-07T14:00:00.000Z", fired_at_local: "2026-03-07T09:00:00-05:00", date: "2026-03-07", time: "09:00", weekday: "Saturday", timezone: "America/New_York" },
      });
      expect(await runsOf(app, applet.id)).toEqual([expect.objectContaining({ event_id: events[0]!.id, status: "queued" })]);
      // Computed from now, not from the missed slot: the next 09:00, which is EDT after the change.
      expect((await stateOf(app, applet.id)).nextRunAt).toBe("2026-03-08T13:00:00.000Z");

      const second = await tick();
      expect(second).toMatchObject({ ran: true, events: 0, fired: [] });
      expect(await eventsOf(app, applet.id)).toHaveLength(1);
      expect(await runsOf(app, applet.id)).toHaveLength(1);
    });

    test("AC3: downtime spanning many slots gives one catch-up fire, not a backlog", async () => {
      const applet = await createApplet(app, "Hourly", { type: "schedule", config: { cron: "0 * * * *", timezone: "UTC" } });
      expect((await stateOf(app, applet.id)).nextRunAt).toBe("2026-03-07T13:00:00.000Z");
      app.clock.set("2026-03-07T18:20:00.000Z"); // slots 13:00 … 18:00 missed
      await tick();
      expect((await eventsOf(app, applet.id)).map((e) => e.dedupe_key)).toEqual(["2026-03-07T13:00:00.000Z"]);
      expect((await stateOf(app, applet.id)).nextRunAt).toBe("2026-03-07T19:00:00.000Z");
    });

    test("AC3: on time across the DST change: 09:00 New York fires at 14:00Z on 2026-03-07 and 13:00Z on 2026-03-09", async () => {
      const applet = await createApplet(app, "Daily", { type: "schedule", config: { cron: "0 9 * * *", timezone: "America/New_York" } });
      for (const t of ["2026-03-07T14:00:00.000Z", "2026-03-08T13:00:00.000Z", "2026-03-09T13:00:00.000Z"]) {
        app.clock.set(t);
        await tick();
      }
      expect((await eventsOf(app, applet.id)).map((e) => [e.payload.fired_at, e.payload.time])).toEqual([
        ["2026-03-07T14:00:00.000Z", "09:00"],
        ["2026-03-08T13:00:00.000Z", "09:00"],
        ["2026-03-09T13:00:00.000Z", "09:00"],
      ]);
    });

    test("AC3: a tick before the fire time does nothing; disabled applets are not polled", async () => {
      const applet = await createApplet(app, "Later", { type: "schedule", config: { cron: "0 9 * * *", timezone: "America/New_York" } });
      app.clock.set("2026-03-07T13:59:59.999Z");
      expect(await tick()).toMatchObject({ events: 0, fired: [] });
      await app.applets.setEnabled(applet.id, false);
      expect((await stateOf(app, applet.id)).nextRunAt).toBeNull();
      app.clock.set("2026-03-07T15:00:00.000Z");
      expect(await tick()).toMatchObject({ events: 0, fired: [] });
      expect(await eventsOf(app, applet.id)).toHaveLength(0);
    });

    test("AC3: an enabled applet whose next_run_at is null gets scheduled by the tick (a schedule at its next slot, not now)", async () => {
      const applet = await createApplet(app, "Hand-edited", { type: "schedule", config: { cron: "0 9 * * *", timezone: "America/New_York" } });
      await app.store.triggerState.setNextRunAt(applet.id, null, app.clock.now().toISOString());
      await tick();
      expect(await eventsOf(app, applet.id)).toHaveLength(0);
      expect((await stateOf(app, applet.id)).nextRunAt).toBe("2026-03-07T14:00:00.000Z");
    });
  });

  describe("schedule policies", () => {
    const hourly = (extra: Record<string, unknown>) => createApplet(app, "Hourly", { type: "schedule", config: { cron: "0 * * * *", timezone: "UTC", ...extra } });
    const keys = async (id: string) => (await eventsOf(app, id)).map((e) => e.dedupe_key);

    test("catch_up skip fires nothing for the slots missed in downtime, and the next slot on time", async () => {
      const applet = await hourly({ catch_up: "skip" });
      app.clock.set("2026-03-07T18:20:00.000Z"); // 13:00 … 18:00 missed
      await tick();
      expect(await keys(applet.id)).toEqual([]);
      expect((await stateOf(app, applet.id)).nextRunAt).toBe("2026-03-07T19:00:00.000Z");
      app.clock.set("2026-03-07T19:00:10.000Z");
      await tick();
      const events = await eventsOf(app, applet.id);
      expect(events.map((e) => e.dedupe_key)).toEqual(["2026-03-07T19:00:00.000Z"]);
      expect(events[0]!.payload.late_by_seconds).toBe(10);
    });

    test("catch_up all fires each missed slot once, oldest first, within the limit and the window", async () => {
      const all = await hourly({ catch_up: "all" });
      const limited = await hourly({ catch_up: "all", catch_up_limit: 3 });
      const windowed = await hourly({ catch_up: "all", catch_up_window_hours: 2 });
      app.clock.set("2026-03-07T18:20:00.000Z");
      await tick();
      expect(await keys(all.id)).toEqual(["13", "14", "15", "16", "17", "18"].map((h) => `2026-03-07T${h}:00:00.000Z`));
      expect(await keys(limited.id)).toEqual(["13", "14", "15"].map((h) => `2026-03-07T${h}:00:00.000Z`));
      expect(await keys(windowed.id)).toEqual(["17", "18"].map((h) => `2026-03-07T${h}:00:00.000Z`));
      // Keyed by slot: a second tick adds none of them again.
      await tick();
      expect(await keys(all.id)).toHaveLength(6);
      expect((await eventsOf(app, all.id))[0]!.payload.late_by_seconds).toBe(5 * 3600 + 20 * 60);
    });

    test("catch_up once (the default) keeps the first version's single catch-up fire, with its lateness", async () => {
      const applet = await hourly({ catch_up: "once" });
      app.clock.set("2026-03-07T18:20:00.000Z");
      await tick();
      const events = await eventsOf(app, applet.id);
      expect(events.map((e) => e.dedupe_key)).toEqual(["2026-03-07T13:00:00.000Z"]);
      expect(events[0]!.payload.late_by_seconds).toBe(5 * 3600 + 20 * 60);
    });

    const minutely = (overlap: string) => createApplet(app, `Every minute ${overlap}`, { type: "schedule", config: { cron: "* * * * *", timezone: "UTC", overlap } });
    const fireAt = async (iso: string) => {
      app.clock.set(iso);
      await tick();
    };

    test("overlap skip stores a fire that meets an unfinished run as a skipped run that says why", async () => {
      const applet = await minutely("skip");
      await fireAt("2026-03-07T12:01:05.000Z");
      await fireAt("2026-03-07T12:02:05.000Z");
      const runs = await runsOf(app, applet.id);
      expect(runs.map((r) => r.status)).toEqual(["queued", "skipped"]);
      const skipped = (await app.store.runs.get(runs[1]!.id))!;
      expect(skipped.error).toBe("skipped: overlap (the previous run was still waiting)");
      // Once the first is done, the next fire runs again.
      const claimed = (await app.store.runs.claim("w1", app.clock.now()))!;
      await app.store.runs.finish(claimed, "succeeded", [], null, app.clock.now());
      await fireAt("2026-03-07T12:03:05.000Z");
      expect((await runsOf(app, applet.id)).map((r) => r.status)).toEqual(["succeeded", "skipped", "queued"]);
    });

    test("overlap buffer_one keeps one fire waiting behind a running one and skips the rest; queue (the default) queues all", async () => {
      const buffered = await minutely("buffer_one");
      const queued = await minutely("queue");
      await fireAt("2026-03-07T12:01:05.000Z");
      // The first run of each applet starts.
      await app.store.runs.claim("w1", app.clock.now());
      await app.store.runs.claim("w2", app.clock.now());
      await fireAt("2026-03-07T12:02:05.000Z");
      await fireAt("2026-03-07T12:03:05.000Z");
      expect((await runsOf(app, buffered.id)).map((r) => r.status)).toEqual(["running", "queued", "skipped"]);
      expect((await runsOf(app, queued.id)).map((r) => r.status)).toEqual(["running", "queued", "queued"]);
    });

    test("an unknown policy or a limit out of range is refused on save with the field named", async () => {
      await expect(hourly({ catch_up: "sometimes" })).rejects.toThrow(/catch_up/);
      await expect(hourly({ catch_up: "all", catch_up_limit: 500 })).rejects.toThrow(/catch_up_limit/);
      await expect(hourly({ overlap: "parallel" })).rejects.toThrow(/overlap/);
    });
  });

  describe("AC4: RSS applets", () => {
    /** A feed server: the current body and ETag, conditional GET honoured when `conditional`. */
    function feedServer(url: string, initial: string) {
      const feed = { body: initial, etag: '"v1"', lastModified: "Sat, 07 Mar 2026 11:00:00 GMT", status: 200, conditional: true, requests: [] as { ifNoneMatch: string | null; ifModifiedSince: string | null }[] };
      server.use(
        http.get(url, ({ request }) => {
          const ifNoneMatch = request.headers.get("if-none-match");
          feed.requests.push({ ifNoneMatch, ifModifiedSince: request.headers.get("if-modified-since") });
          if (feed.status !== 200) return new HttpResponse("upstream broke", { status: feed.status });
          if (feed.conditional && ifNoneMatch === feed.etag) return new HttpResponse(null, { status: 304, headers: { etag: feed.etag } });
          return new HttpResponse(feed.body, { status: 200, headers: { "content-type": "application/rss+xml", etag: feed.etag, "last-modified": feed.lastModified } });
        }),
      );
      return feed;
    }

    test("AC4: first poll creates no runs; two new items create two runs oldest first; the same feed again none; a 304 none and last_polled_at moves", async () => {
      const url = "https://feeds.example/field-notes.xml";
      const feed = feedServer(url, withoutNewest(readFeed("rss.xml"), 2));
      const applet = await createApplet(app, "Blog", { type: "rss", config: { url, interval_min: 15 } });

      expect(await tick()).toMatchObject({ events: 0, fired: [applet.id] });
      expect(await runsOf(app, applet.id)).toHaveLength(0);
      expect(await stateOf(app, applet.id)).toMatchObject({ seenKeys: ["field-notes-0001", "field-notes-0002", "field-notes-0003"], etag: '"v1"', lastError: null });
      expect((await stateOf(app, applet.id)).nextRunAt).toBe("2026-03-07T12:15:00.000Z");

      feed.body = readFeed("rss.xml");
      feed.etag = '"v2"';
      app.clock.set("2026-03-07T12:15:04.000Z");
      expect(await tick()).toMatchObject({ events: 2 });
      // The second request was conditional on what the first one stored.
      expect(feed.requests[1]).toEqual({ ifNoneMatch: '"v1"', ifModifiedSince: "Sat, 07 Mar 2026 11:00:00 GMT" });
      const events = await eventsOf(app, applet.id);
      expect(events.map((e) => e.dedupe_key)).toEqual(["field-notes-0004", "field-notes-0005"]);
      expect((await runsOf(app, applet.id)).map((r) => r.event_id)).toEqual(events.map((e) => e.id));
      expect(events[1]!.payload).toMatchObject({
        title: "Rebuilding the garden irrigation controller",
        link: "https://blog.example.com/2026/03/irrigation-controller",
        author: "Ada Lovelace",
        published_at: "2026-03-07T18:30:00.000Z",
        categories: ["hardware", "garden"],
        feed_title: "Field Notes",
        feed_url: url,
      });
      expect(events[1]!.payload.content).toContain("<strong>six winters</strong>");
      expect(events[1]!.payload.summary).toMatch(/^The old controller died after six winters\. This time/);
      // The interval grid stays on the slot, not on the tick's lateness.
      expect((await stateOf(app, applet.id)).nextRunAt).toBe("2026-03-07T12:30:00.000Z");

      feed.conditional = false;
      app.clock.set("2026-03-07T12:30:00.000Z");
      expect(await tick()).toMatchObject({ events: 0, fired: [applet.id] });
      expect(await runsOf(app, applet.id)).toHaveLength(2);

      feed.conditional = true;
      app.clock.set("2026-03-07T12:45:00.000Z");
      expect(await tick()).toMatchObject({ events: 0, fired: [applet.id] });
      expect(feed.requests.at(-1)?.ifNoneMatch).toBe('"v2"');
      expect(await runsOf(app, applet.id)).toHaveLength(2);
      expect(await stateOf(app, applet.id)).toMatchObject({ lastPolledAt: "2026-03-07T12:45:00.000Z", etag: '"v2"' });
    });

    test("AC4: a feed with no GUIDs dedupes on link", async () => {
      const url = "https://feeds.example/council.xml";
      const full = readFeed("rss-no-guid.xml");
      const feed = feedServer(url, full);
      feed.conditional = false;
      const applet = await createApplet(app, "Council", { type: "rss", config: { url } });
      await tick();
      expect((await stateOf(app, applet.id)).seenKeys).toEqual([
        "https://council.example.net/notices/recycling",
        "https://council.example.net/notices/library-hours",
        "https://council.example.net/notices/mill-lane-closure",
      ]);
      // A new notice, still without a guid; the old ones are served again unchanged.
      feed.body = full.replace(
        "<item>",
        "<item>\n      <title>Street party permit</title>\n      <link>https://council.example.net/notices/street-party</link>\n      <pubDate>Sun, 08 Mar 2026 09:00:00 +0000</pubDate>\n      <description>Apply by Friday.</description>\n    </item>\n    <item>",
      );
      app.clock.advance(15 * MIN);
      await tick();
      app.clock.advance(15 * MIN);
      await tick();
      expect((await eventsOf(app, applet.id)).map((e) => [e.dedupe_key, e.payload.title])).toEqual([["https://council.example.net/notices/street-party", "Street party permit"]]);
    });

    test("AC4: an Atom feed (id, no guid) with fire_on_first_poll fires every item, oldest first, keyed by id", async () => {
      const url = "https://feeds.example/releases.atom";
      feedServer(url, readFeed("atom.xml"));
      const applet = await createApplet(app, "Releases", { type: "rss", config: { url, fire_on_first_poll: true } });
      await tick();
      const events = await eventsOf(app, applet.id);
      expect(events.map((e) => e.payload.title)).toEqual(["pnpm 12.4.2", "caddy 2.11.0", "croner 11.0.1", "node 20.21.0", "sqlite 3.52.1"]);
      expect(events[0]!.dedupe_key).toBe("tag:releases.example.org,2026-03-05:pnpm-12.4.2");
      expect(events[4]!.payload).toMatchObject({ author: "Release Bot", categories: ["database"], summary: "Bug fixes for the query planner and the JSON functions.", feed_title: "Release Radar" });
    });

    test("AC4: max_items_per_poll caps one poll to the newest items, still oldest first", async () => {
      const url = "https://feeds.example/flood.xml";
      feedServer(url, readFeed("rss.xml"));
      const applet = await createApplet(app, "Flood", { type: "rss", config: { url, fire_on_first_poll: true, max_items_per_poll: 2 } });
      await tick();
      expect((await eventsOf(app, applet.id)).map((e) => e.dedupe_key)).toEqual(["field-notes-0004", "field-notes-0005"]);
      expect((await stateOf(app, applet.id)).seenKeys).toHaveLength(5);
    });

    test("AC4: errors set last_error and create no run; after 3 in a row the feed is polled hourly until one succeeds", async () => {
      const url = "https://feeds.example/flaky.xml";
      const feed = feedServer(url, readFeed("rss.xml"));
      const applet = await createApplet(app, "Flaky", { type: "rss", config: { url, interval_min: 15 } });
      await tick(); // first poll: remembers the five items
      feed.status = 500;
      const nextAfter: string[] = [];
      for (let i = 0; i < 4; i++) {
        app.clock.set((await stateOf(app, applet.id)).nextRunAt!);
        await tick();
        nextAfter.push((await stateOf(app, applet.id)).nextRunAt!);
      }
      expect(await stateOf(app, applet.id)).toMatchObject({ errorCount: 4, lastError: `rss: ${url} answered HTTP 500` });
      expect(nextAfter).toEqual(["2026-03-07T12:30:00.000Z", "2026-03-07T12:45:00.000Z", "2026-03-07T13:45:00.000Z", "2026-03-07T14:45:00.000Z"]);
      expect(await runsOf(app, applet.id)).toHaveLength(0);

      feed.status = 200;
      app.clock.set("2026-03-07T14:45:00.000Z");
      await tick();
      expect(await stateOf(app, applet.id)).toMatchObject({ errorCount: 0, lastError: null, nextRunAt: "2026-03-07T15:00:00.000Z" });
    });

    test("AC4: a feed over 5 MB is refused as an error, never parsed in part", async () => {
      const url = "https://feeds.example/huge.xml";
      const huge = readFeed("rss.xml").replace("<description>Notes", `<description>${"x".repeat(5 * 1024 * 1024)} Notes`);
      feedServer(url, huge);
      const applet = await createApplet(app, "Huge", { type: "rss", config: { url, fire_on_first_poll: true } });
      await tick();
      expect(await eventsOf(app, applet.id)).toHaveLength(0);
      expect((await stateOf(app, applet.id)).lastError).toMatch(/larger than 5 MB/);
    });
  });

  describe("AC5: poll applets", () => {
    const prices = [120, 90, 80, 110, 70].map((v, i) => readFileSync(path.join(POLL, `price-${i + 1}-${v}.json`), "utf8"));

    function priceServer(url: string) {
      const api = { index: 0, requests: [] as { authorization: string | null }[], body: null as string | null, status: 200 };
      server.use(
        http.get(url, ({ request }) => {
          api.requests.push({ authorization: request.headers.get("authorization") });
          if (api.status !== 200) return HttpResponse.json({ error: "down" }, { status: api.status });
          return new HttpResponse(api.body ?? prices[api.index]!, { headers: { "content-type": api.body ? "text/html" : "application/json" } });
        }),
      );
      return api;
    }

    async function pollSequence(applet: { id: string }, api: { index: number }, steps: number) {
      for (let i = 0; i < steps; i++) {
        api.index = i;
        app.clock.set((await stateOf(app, applet.id)).nextRunAt!);
        await tick();
      }
    }

    test("AC5: condition changed fires only on a differing value, with value and previous_value", async () => {
      const url = "https://api.example.test/widget/price";
      const api = priceServer(url);
      const applet = await createApplet(app, "Price watch", { type: "poll", config: { url, path: "data.price", condition: "changed", interval_min: 5 } });
      api.index = 0;
      await tick(); // first poll: remembers 120
      expect(await eventsOf(app, applet.id)).toHaveLength(0);
      expect((await stateOf(app, applet.id)).nextRunAt).toBe("2026-03-07T12:05:00.000Z");
      app.clock.set("2026-03-07T12:05:00.000Z");
      await tick(); // 120 again
      expect(await eventsOf(app, applet.id)).toHaveLength(0);
      api.index = 1;
      app.clock.set("2026-03-07T12:10:00.000Z");
      await tick(); // 90
      const events = await eventsOf(app, applet.id);
      expect(events).toHaveLength(1);
      expect(events[0]!.payload).toMatchObject({ value: 90, previous_value: 120, url, path: "data.price", changed_at: "2026-03-07T12:10:00.000Z", status: 200, response: JSON.parse(prices[1]!) });
      expect(await runsOf(app, applet.id)).toHaveLength(1);
    });

    test("AC5: condition lt 100 over 120, 90, 80, 110, 70 fires exactly twice, at 90 and at 70", async () => {
      const url = "https://api.example.test/widget/price";
      const api = priceServer(url);
      const applet = await createApplet(app, "Below 100", { type: "poll", config: { url, path: "data.price", condition: "lt", target: 100 } });
      await pollSequence(applet, api, 5);
      expect(api.requests).toHaveLength(5);
      expect((await eventsOf(app, applet.id)).map((e) => [e.payload.value, e.payload.previous_value])).toEqual([
        [90, 120],
        [70, 110],
      ]);
      expect(await runsOf(app, applet.id)).toHaveLength(2);
    });

    test("AC5: header templates resolve secrets at poll time; non-2xx and non-JSON answers set last_error and fire nothing", async () => {
      await app.secrets.set("PRICE_API_TOKEN", "tok-3f9a");
      const url = "https://api.example.test/widget/price";
      const api = priceServer(url);
      const applet = await createApplet(app, "Authed", { type: "poll", config: { url, path: "data.price", headers: { Authorization: "Bearer {{secrets.PRICE_API_TOKEN}}" } } });
      await tick();
      expect(api.requests[0]!.authorization).toBe("Bearer tok-3f9a");

      api.status = 503;
      api.index = 1;
      app.clock.advance(5 * MIN);
      await tick();
      expect(await stateOf(app, applet.id)).toMatchObject({ lastError: `poll: ${url} answered HTTP 503`, errorCount: 1 });

      api.status = 200;
      api.body = "<html>maintenance</html>";
      app.clock.advance(5 * MIN);
      await tick();
      expect((await stateOf(app, applet.id)).lastError).toMatch(/did not answer JSON/);
      expect(await eventsOf(app, applet.id)).toHaveLength(0);
      // The stored value is still the last good one: the next good answer is compared with 120.
      expect((await stateOf(app, applet.id)).lastValue).toMatchObject({ value: 120 });
    });
  });

  describe("AC12: secrets used while polling never reach last_error, the log or Fetch now", () => {
    const SECRET = "sk_poll_9a8b7c6d";

    async function secretApp() {
      const captured = captureLog();
      const a = createTestApp({ start: "2026-03-07T12:00:00.000Z", log: captured.log, engine });
      extraApps.push(a);
      await a.secrets.set("API_KEY", SECRET);
      return { a, lines: captured.lines, api: createApi({ app: a, applets: a.applets, auth: testIdentity(a) }) };
    }
    const fetchNow = async (api: ReturnType<typeof createApi>, config: Record<string, unknown>) =>
      (await (await api.handle(new Request("http://localhost/api/triggers/fetch", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ type: "poll", config }) }))).json()) as {
        ok: boolean;
        error?: string;
        result?: unknown;
      };

    test("AC12: a network error on a URL carrying {{secrets.X}} is stored, logged and returned with the secret [redacted]", async () => {
      const { a, lines, api } = await secretApp();
      server.use(http.get("https://api.example.test/price", () => HttpResponse.error()));
      const config = { url: "https://api.example.test/price?key={{secrets.API_KEY}}", path: "data.price" };
      const applet = await createApplet(a, "Secret URL", { type: "poll", config });
      await tick(a);
      const lastError = (await stateOf(a, applet.id)).lastError!;
      expect(lastError).toMatch(/api\.example\.test\/price\?key=\[redacted\]/);
      expect(lastError).not.toContain(SECRET);
      // The row at rest is the subject: no column of it may hold the secret, whatever a store method shows.
      const stored = await a.sql.get("SELECT * FROM trigger_state WHERE applet_id = ?", applet.id);
      expect(JSON.stringify(stored)).not.toContain(SECRET);
      expect(lines.some((l) => l.includes("poll failed"))).toBe(true);
      expect(lines.join("\n")).not.toContain(SECRET);

      const fetched = await fetchNow(api, config);
      expect(fetched.ok).toBe(false);
      expect(fetched.error).toContain("key=[redacted]");
      expect(JSON.stringify(fetched)).not.toContain(SECRET);
    });

    test("AC12: a response that echoes the secret is redacted in the event, the stored value and Fetch now", async () => {
      const { a, api } = await secretApp();
      let price = 120;
      server.use(
        http.get("https://api.example.test/echo", ({ request }) =>
          HttpResponse.json({ data: { price, note: `you sent ${new URL(request.url).searchParams.get("key")}` }, query: request.url }),
        ),
      );
      const config = { url: "https://api.example.test/echo?key={{secrets.API_KEY}}", path: "data" };
      const applet = await createApplet(a, "Echo", { type: "poll", config });
      await tick(a); // first poll: remembers
      price = 90;
      a.clock.set((await stateOf(a, applet.id)).nextRunAt!);
      await tick(a); // changed: fires
      const events = await eventsOf(a, applet.id);
      expect(events).toHaveLength(1);
      expect(events[0]!.payload).toMatchObject({ value: { price: 90, note: "you sent [redacted]" }, previous_value: { price: 120, note: "you sent [redacted]" } });
      a.clock.set((await stateOf(a, applet.id)).nextRunAt!);
      await tick(a); // the same answer again: the redacted values compare equal, nothing fires
      expect(await eventsOf(a, applet.id)).toHaveLength(1);
      // The rows at rest are the subject: what the database holds, not what a store method shows.
      const storedEvents = await a.sql.all("SELECT payload FROM events WHERE applet_id = ?", applet.id);
      const storedState = await a.sql.get("SELECT last_value FROM trigger_state WHERE applet_id = ?", applet.id);
      expect(JSON.stringify([storedEvents, storedState])).not.toContain(SECRET);

      const fetched = await fetchNow(api, config);
      expect(fetched.ok).toBe(true);
      expect(JSON.stringify(fetched)).not.toContain(SECRET);
      expect(JSON.stringify(fetched)).toContain("you sent [redacted]");
    });
  });

  describe("AC17: job lock and exactly-once across workers", () => {
    test("AC17: two worker instances (two connections) ticking at a fire time create exactly one event and one run", async () => {
      const applet = await createApplet(app, "Shared", { type: "schedule", config: { cron: "0 9 * * *", timezone: "America/New_York" } });
      const other = createTestApp({ peerOf: app, start: "2026-03-07T14:00:00.000Z" });
      extraApps.push(other);
      app.clock.set("2026-03-07T14:00:00.000Z");
      const results = await Promise.all([runSchedulerTick(app, app.clock.now(), { holder: "worker-a" }), runSchedulerTick(other, other.clock.now(), { holder: "worker-b" })]);
      // Whether the second tick found the lock held or ran after the first released it depends on
      // timing (on PostgreSQL the two connections do not wait on each other): what must hold is
      // that one fire happened, once. The lock's exclusivity is its own test (a live lock is respected).
      expect(results.some((r) => r.ran)).toBe(true);
      expect(results.reduce((n, r) => n + r.events, 0)).toBe(1);
      expect(await eventsOf(app, applet.id)).toHaveLength(1);
      expect(await runsOf(app, applet.id)).toHaveLength(1);
    });

    test("AC17: without the lock, the slot claim alone fires each of 50 due applets once across two connections", async () => {
      const ids: string[] = [];
      for (let i = 0; i < 50; i++) ids.push((await createApplet(app, `S${i}`, { type: "schedule", config: { cron: "*/5 * * * *", timezone: "Europe/Berlin" } })).id);
      const other = createTestApp({ peerOf: app, start: "2026-03-07T12:05:00.000Z" });
      extraApps.push(other);
      app.clock.set("2026-03-07T12:05:00.000Z");
      const [a, b] = await Promise.all([reconcileDue(app, app.clock.now()), reconcileDue(other, other.clock.now())]);
      expect([...a.fired, ...b.fired].sort()).toEqual([...ids].sort());
      expect(a.events + b.events).toBe(50);
      // Both reached the same due rows: the losers of each claim are what the claim prevented.
      expect(a.lost.length + b.lost.length).toBeGreaterThan(0);
      const counts = await Promise.all(ids.map(async (id) => (await eventsOf(app, id)).length));
      expect(counts.every((n) => n === 1)).toBe(true);
      expect(await storedRunsOf(app.store)).toHaveLength(50);
    });

    test("AC17: a worker killed between claiming a slot and storing its event does not lose the fire", async () => {
      const applet = await createApplet(app, "Crashy", { type: "schedule", config: { cron: "0 9 * * *", timezone: "America/New_York" } });
      const slot = (await stateOf(app, applet.id)).nextRunAt!;
      expect(slot).toBe("2026-03-07T14:00:00.000Z");
      app.clock.set("2026-03-07T14:00:00.000Z");
      // What the reconciler does first, and then the process dies: the slot is claimed, nothing stored.
      expect(await app.store.triggerState.claimDue(applet.id, slot, "2026-03-08T13:00:00.000Z", app.clock.now().toISOString())).toBe(true);
      expect(await eventsOf(app, applet.id)).toHaveLength(0);

      app.clock.advance(15_000);
      expect(await tick()).toMatchObject({ ran: true, events: 1 });
      const events = await eventsOf(app, applet.id);
      expect(events).toHaveLength(1);
      expect(events[0]).toMatchObject({ dedupe_key: slot });
      expect((events[0]!.payload as { fired_at: string }).fired_at).toBe(slot);
      expect((await stateOf(app, applet.id)).nextRunAt).toBe("2026-03-08T13:00:00.000Z");
      // Recovered once: later ticks fire nothing more for that slot.
      app.clock.advance(15_000);
      expect(await tick()).toMatchObject({ events: 0 });
      expect(await app.store.triggerState.listPending()).toEqual([]);
    });

    test("AC17: a pending mark whose event was stored, or whose applet is disabled, fires nothing and is cleared", async () => {
      const stored = await createApplet(app, "Stored", { type: "schedule", config: { cron: "0 9 * * *", timezone: "America/New_York" } });
      const paused = await createApplet(app, "Paused", { type: "schedule", config: { cron: "0 9 * * *", timezone: "America/New_York" } });
      app.clock.set("2026-03-07T14:00:00.000Z");
      expect(await tick()).toMatchObject({ events: 2 });
      // The worker stored the event but died before clearing the mark (as if): put the mark back.
      (await app.store.triggerState.claimDue(stored.id, (await stateOf(app, stored.id)).nextRunAt!, "2026-03-09T13:00:00.000Z", app.clock.now().toISOString()));
      // No store method marks a slot already past: the row a crash would leave, written directly.
      await app.sql.run("UPDATE trigger_state SET pending_slot = '2026-03-07T14:00:00.000Z' WHERE applet_id = ?", stored.id);
      await app.store.triggerState.claimDue(paused.id, (await stateOf(app, paused.id)).nextRunAt!, "2026-03-09T13:00:00.000Z", app.clock.now().toISOString());
      await app.applets.setEnabled(paused.id, false);
      app.clock.advance(15_000);
      expect(await tick()).toMatchObject({ events: 0 });
      expect(await eventsOf(app, stored.id)).toHaveLength(1);
      expect(await eventsOf(app, paused.id)).toHaveLength(1);
      expect(await app.store.triggerState.listPending()).toEqual([]);
    });

    test("AC17: a job_locks row whose expires_at is in the past is taken over by the next tick; a live one is respected", async () => {
      const applet = await createApplet(app, "Takeover", { type: "schedule", config: { cron: "0 9 * * *", timezone: "America/New_York" } });
      // A worker killed while holding the lock: taken at 13:00 with a 60 s TTL, never released.
      expect(await app.store.jobLocks.take("scheduler_tick", "killed-worker", new Date("2026-03-07T14:00:00.000Z"), 60_000)).toBe(true);

      app.clock.set("2026-03-07T14:00:30.000Z"); // still live
      expect(await tick()).toMatchObject({ ran: false, events: 0 });
      expect(await eventsOf(app, applet.id)).toHaveLength(0);

      app.clock.set("2026-03-07T14:01:00.001Z"); // expired
      expect(await tick()).toMatchObject({ ran: true, events: 1 });
      expect(await app.store.jobLocks.get("scheduler_tick")).toMatchObject({ lockedBy: null, expiresAt: null, lastRunAt: "2026-03-07T14:01:00.001Z" });
    });
  });

  describe("Worker: one applet's error never stops the loop", () => {
    test("Worker: a failing fetch, a network error, a broken stored config and an invalid cron land in last_error while the other applets fire", async () => {
      server.use(
        http.get("https://api.example.test/broken", () => HttpResponse.json({ error: "boom" }, { status: 500 })),
        http.get("https://api.example.test/unreachable", () => HttpResponse.error()),
      );
      const failing = await createApplet(app, "500", { type: "poll", config: { url: "https://api.example.test/broken", path: "x" } });
      const unreachable = await createApplet(app, "Network", { type: "poll", config: { url: "https://api.example.test/unreachable", path: "x" } });
      const brokenConfig = await createApplet(app, "Broken config", { type: "rss", config: { url: "https://feeds.example/x.xml" } });
      const badCron = await createApplet(app, "Bad cron", { type: "schedule", config: { cron: "0 9 * * *", timezone: "UTC" } });
      const good = await createApplet(app, "Good", { type: "schedule", config: { cron: "0 13 * * *", timezone: "UTC" } });
      // Definitions edited behind the API's back: the tick must survive them.
      // The store writes what it is given (validation is the applet service's), as a hand edit would.
      const setConfig = async (id: string, config: unknown) => {
        const a = (await app.store.applets.get(id))!;
        const def = a.definition as { trigger: Record<string, unknown> };
        await app.store.applets.update({ ...a, definition: { ...def, trigger: { ...def.trigger, config } }, now: a.updatedAt });
      };
      await setConfig(brokenConfig.id, { url: "ftp://nope", interval_min: 15 });
      await setConfig(badCron.id, { cron: "0 9 * *", timezone: "UTC" });
      await app.store.triggerState.setNextRunAt(badCron.id, "2026-03-07T12:30:00.000Z", app.clock.now().toISOString());

      app.clock.set("2026-03-07T13:00:00.000Z");
      const result = await tick();
      expect(result.fired).toEqual(expect.arrayContaining([good.id, failing.id, unreachable.id, brokenConfig.id]));
      expect(result.errored).toEqual([badCron.id]);
      expect(await eventsOf(app, good.id)).toHaveLength(1);
      expect((await stateOf(app, failing.id)).lastError).toBe("poll: https://api.example.test/broken answered HTTP 500");
      expect((await stateOf(app, unreachable.id)).lastError).toMatch(/api\.example\.test/);
      expect((await stateOf(app, brokenConfig.id)).lastError).toMatch(/invalid rss config: url/);
      expect((await stateOf(app, badCron.id)).lastError).toMatch(/invalid cron/);
      // An unusable timing would fail on every tick: the applet is switched off instead.
      expect((await app.store.applets.get(badCron.id))!.enabled).toBe(false);
      // The failing ones were still advanced: no busy loop on the next tick.
      expect((await stateOf(app, failing.id)).nextRunAt).toBe("2026-03-07T13:05:00.000Z");
      expect((await tick()).fired).toEqual([]);
    });
  });

  describe("Worker: retention", () => {
    test("Worker: runs and events older than RUN_RETENTION_DAYS are deleted with their attachments (in the database, and a legacy folder), under the retention lock", async () => {
      const applet = await createApplet(app, "Old", { type: "schedule", config: { cron: "0 * * * *", timezone: "UTC" } });
      app.clock.set("2026-03-07T13:00:00.000Z");
      await tick();
      const [old] = await eventsOf(app, applet.id);
      const folder = path.join(app.dataDir, "files", "events", old!.id);
      mkdirSync(folder, { recursive: true });
      writeFileSync(path.join(folder, "receipt.pdf"), "%PDF-1.4");
      await app.store.eventFiles.save(old!.id, [{ filename: "invoice.pdf", contentType: "application/pdf", content: Buffer.from("%PDF-1.4") }], app.clock.now().toISOString());
      // The run finished (retention keeps queued and running runs).
      const run = await app.store.runs.claim("test-worker", app.clock.now());
      expect(run?.eventId).toBe(old!.id);
      await app.store.runs.finish(run!, "succeeded", null, null, app.clock.now());

      app.clock.set("2026-04-05T13:00:00.000Z"); // 29 days later: kept
      await tick();
      expect((await runRetention(app, app.clock.now(), { holder: "test" })).deletedEvents).toBe(0);

      app.clock.set("2026-04-06T14:00:00.000Z"); // 30 days and an hour: gone
      expect(await app.store.jobLocks.take("retention", "other-worker", app.clock.now(), 10 * MIN)).toBe(true);
      expect(await runRetention(app, app.clock.now(), { holder: "test" })).toMatchObject({ ran: false });
      expect(await app.store.jobLocks.release("retention", "other-worker", app.clock.now())).toBe(true);

      const r = await runRetention(app, app.clock.now(), { holder: "test" });
      expect(r).toMatchObject({ ran: true, deletedEvents: 1 });
      expect((await eventsOf(app, applet.id)).map((e) => e.id)).not.toContain(old!.id);
      expect((await runsOf(app, applet.id)).map((x) => x.event_id)).not.toContain(old!.id);
      expect(existsSync(folder)).toBe(false);
      expect(await app.store.eventFiles.get(old!.id, "invoice.pdf")).toBeNull();
      // The newer event (and its still-queued run) stays.
      expect(await eventsOf(app, applet.id)).toHaveLength(1);
    });
  });
});
