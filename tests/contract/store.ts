/**
 * The behaviour every Store promises (lib/db/store/types.ts). Each engine's test file calls
 * `runStoreContract` with a factory; a case an engine cannot run says why in its name.
 *
 * Every case starts from a fresh, empty, migrated store. Times are fixed instants, never the wall
 * clock; nothing sleeps.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { ClaimedPlannedRun, ClaimedRun, IngestInput, PlannedRunInsert, PlanWrite, Store, WaitInsert } from "@/lib/db/store";
import type { Step } from "@/lib/executor/types";
import { QUEUE_VACUUM_LOCK } from "@/lib/queue/vacuum";
import { emptyTriggerState } from "@/lib/triggers/types";

export interface StoreContractOptions {
  name: string;
  /** A fresh, empty store (its own file / schema). */
  create: () => Promise<Store>;
  /** Closes the store and drops what `create` made. */
  cleanup: (store: Store) => Promise<void>;
  /** A second, independent connection to the same database, for the cases with two workers. */
  connectPeer: (store: Store) => Promise<Store>;
  /** Cases this engine cannot run, by the start of their name, with the reason. */
  skip?: Record<string, string>;
}

const T0 = new Date("2026-03-07T12:00:00.000Z");
const at = (ms: number) => new Date(T0.getTime() + ms);
const iso = (ms = 0) => at(ms).toISOString();

const definition = { version: 1, trigger: { type: "webhook", config: {} }, actions: [{ type: "http", config: { url: "https://example.com/in" } }] };
let tokens = 0;
const token = () => `token-${String(++tokens).padStart(6, "0")}-0123456789abcdefghijklmnopqrstuv`;

async function addApplet(store: Store, id: string, extra: { triggerType?: string; enabled?: boolean; createdAt?: string } = {}) {
  await store.applets.insert({
    id,
    name: `Applet ${id}`,
    enabled: extra.enabled ?? true,
    triggerType: extra.triggerType ?? "webhook",
    definition: { ...definition, trigger: { type: extra.triggerType ?? "webhook", config: {} } },
    webhookToken: token(),
    now: extra.createdAt ?? iso(),
  });
}

let events = 0;
const input = (appletId: string, o: Partial<IngestInput> = {}): IngestInput => ({
  appletId,
  source: "webhook",
  dedupeKey: null,
  payloadJson: JSON.stringify({ n: ++events }),
  receivedAt: iso(),
  maxAttempts: 3,
  ...o,
});

const step = (name: string): Step => ({ kind: "action", name, index: 0, status: "succeeded", attempt: 1, warnings: [], logs: [], started_at: iso(), duration_ms: 1, output: { ok: true } });

/** A planned run of applet `appletId`, action 0, subject booking:`subject` at `version` (ids unique per tuple, as the planner's). */
const plannedRun = (appletId: string, eventId: string, o: { subject?: string; version?: number; dueMs?: number; status?: "pending" | "skipped"; reason?: string | null; contact?: string | null; step?: string } = {}): PlannedRunInsert => {
  const subject = o.subject ?? "b1";
  const version = o.version ?? 1;
  const step = o.step ?? "0";
  return {
    id: `run_${appletId}_${subject}_${version}_${step}_${o.contact ?? ""}`,
    ruleId: appletId,
    stepId: step,
    action: "whenthen.run",
    params: { actionIndex: Number(step) },
    subjectType: "booking",
    subjectId: subject,
    subjectVersion: version,
    cancelKey: `${appletId}:booking:${subject}`,
    contactId: o.contact ?? null,
    eventId,
    eventType: "booking.created",
    anchorAt: T0.getTime() + 86_400_000,
    dueAt: T0.getTime() + (o.dueMs ?? 1000),
    expiresAt: null,
    status: o.status ?? "pending",
    reason: o.reason ?? null,
    createdAt: T0.getTime(),
    appletId,
    actionIndex: Number(step),
    note: o.status === "skipped" ? "no anchor: trigger.body.starts_at is missing" : null,
    originalDueAt: null,
    maxAttempts: 3,
  };
};
const planOf = (runs: PlannedRunInsert[], o: { key: string; version: number; supersedes?: boolean; atMs?: number }): PlanWrite => ({
  runs,
  cancel: o.supersedes ? { key: o.key, belowVersion: o.version, reason: "superseded" } : null,
  subject: { key: o.key, version: o.version },
  at: T0.getTime() + (o.atMs ?? 0),
});
let plannedEvents = 0;
const nextEventId = () => `evt-planned-${String(++plannedEvents).padStart(6, "0")}`;
/** Ingests one event of applet "a" about booking `subject` at `version` with its plan. */
async function ingestPlanned(store: Store, o: { subject?: string; version: number; supersedes?: boolean; runs?: number; dueMs?: number; dedupeKey?: string; contact?: string | null }) {
  const eventId = nextEventId();
  const runs = o.runs === 0 ? [] : [plannedRun("a", eventId, { subject: o.subject, version: o.version, dueMs: o.dueMs, contact: o.contact })];
  return store.runs.ingest(input("a", { eventId, dedupeKey: o.dedupeKey ?? null, plan: planOf(runs, { key: `a:booking:${o.subject ?? "b1"}`, version: o.version, supersedes: o.supersedes }) }));
}
const LEASE = { leaseMs: 60_000, maxAttempts: 3 };

export function runStoreContract(options: StoreContractOptions): void {
  const { name, create, cleanup, connectPeer } = options;
  const skips = options.skip ?? {};
  const skipOf = (title: string) => Object.entries(skips).find(([prefix]) => title.startsWith(prefix))?.[1];
  const test = (title: string, fn: () => Promise<void>) => {
    const why = skipOf(title);
    if (why) it.skip(`${title} (skipped: ${why})`, fn);
    else it(title, fn);
  };

  describe(`Store contract: ${name}`, () => {
    const open: Store[] = [];
    const peers: Store[] = [];
    const fresh = async (): Promise<Store> => {
      const store = await create();
      open.push(store);
      return store;
    };
    const peerOf = async (store: Store): Promise<Store> => {
      const peer = await connectPeer(store);
      peers.push(peer);
      return peer;
    };
    afterEach(async () => {
      await Promise.all(peers.splice(0).map((p) => p.close()));
      await Promise.all(open.splice(0).map((s) => cleanup(s)));
    });

    // ---------------------------------------------------------------- alerts

    describe("alerts", () => {
      const channel = { type: "slack" as const, config: { webhook_url: "{{secrets.SLACK}}" } };
      const withChannel = async (store: Store, extra: { autoPause?: boolean; autoPauseAfter?: number; triggerThreshold?: number } = {}) =>
        store.alerts.saveSettings(
          { channel, windowMinutes: 15, triggerThreshold: extra.triggerThreshold ?? 3, autoPause: extra.autoPause ?? false, autoPauseAfter: extra.autoPauseAfter ?? 5 },
          iso(),
        );
      const settle = async (store: Store, appletId: string, status: "succeeded" | "failed" | "dead" | "skipped", ms: number, viaClaim = false) => {
        await store.runs.ingest(input(appletId, { receivedAt: iso(ms) }));
        const run = (await store.runs.claim("w", at(ms)))!;
        const ok = viaClaim
          ? (await store.runs.finishAndClaim(run, status, [], status === "succeeded" ? null : "boom", at(ms), "w")).ok
          : await store.runs.finish(run, status, [], status === "succeeded" ? null : "boom", at(ms));
        expect(ok).toBe(true);
        return run.id;
      };

      test("settings: defaults until saved, then round-trip; setAppletAlerts stores an applet's channel and auto-pause", async () => {
        const store = await fresh();
        expect(await store.alerts.settings()).toEqual({ channel: null, windowMinutes: 15, triggerThreshold: 3, autoPause: false, autoPauseAfter: 5, alertOnRetry: false, updatedAt: null });
        await store.alerts.saveSettings({ channel, windowMinutes: 30, triggerThreshold: 4, autoPause: true, autoPauseAfter: 7 }, iso(1));
        expect(await store.alerts.settings()).toEqual({ channel, windowMinutes: 30, triggerThreshold: 4, autoPause: true, autoPauseAfter: 7, alertOnRetry: false, updatedAt: iso(1) });
        await store.alerts.saveSettings({ channel, windowMinutes: 30, triggerThreshold: 4, autoPause: true, autoPauseAfter: 7, alertOnRetry: true }, iso(2));
        expect(await store.alerts.settings()).toMatchObject({ alertOnRetry: true, updatedAt: iso(2) });
        await addApplet(store, "a");
        expect(await store.alerts.setAppletAlerts("a", { mode: "none" }, false, iso(2))).toBe(true);
        expect(await store.applets.get("a")).toMatchObject({ alertChannel: { mode: "none" }, autoPause: false });
        expect(await store.alerts.setAppletAlerts("a", null, null, iso(3))).toBe(true);
        expect(await store.applets.get("a")).toMatchObject({ alertChannel: null, autoPause: null });
        expect(await store.alerts.setAppletAlerts("nope", null, null, iso(3))).toBe(false);
      });

      test("finish records a failure alert with the run, counts the streak, and a later success records one recovery", async () => {
        const store = await fresh();
        await withChannel(store);
        await addApplet(store, "a");
        const r1 = await settle(store, "a", "dead", 1);
        const r2 = await settle(store, "a", "failed", 2, true);
        expect(await store.applets.get("a")).toMatchObject({ failureStreak: 2, alertOpen: true, runCount: 2 });
        await settle(store, "a", "skipped", 3);
        expect((await store.applets.get("a"))!.failureStreak).toBe(2);
        const ok = await settle(store, "a", "succeeded", 4);
        await settle(store, "a", "succeeded", 5);
        expect(await store.applets.get("a")).toMatchObject({ failureStreak: 0, alertOpen: false });
        const pending = await store.alerts.pending(10);
        expect(pending.map((p) => [p.kind, p.runId, p.appletName])).toEqual([
          ["failure", r1, "Applet a"],
          ["failure", r2, "Applet a"],
          ["recovery", ok, "Applet a"],
        ]);
        expect(pending[0]).toMatchObject({ status: "pending", error: "boom", detail: { status: "dead", streak: 1 } });
      });

      test("alert on the first failed attempt: chosen, retryLater after attempt 1 records a failure alert (once per run) and a retry that succeeds the recovery; not chosen, nothing until the run settles", async () => {
        const store = await fresh();
        await addApplet(store, "a");
        await addApplet(store, "b");
        const fail = async (appletId: string, ms: number) => {
          const { runId } = (await store.runs.ingest(input(appletId, { receivedAt: iso(ms) })))!;
          const first = (await store.runs.claim("w", at(ms)))!;
          expect(await store.runs.retryLater(first, [], "answered 503", at(ms + 60_000), at(ms))).toBe(true);
          return runId;
        };
        // Not chosen (the default): a failed first attempt records nothing.
        await withChannel(store);
        await fail("a", 1);
        expect(await store.alerts.pending(10)).toEqual([]);
        expect((await store.applets.get("a"))!.alertOpen).toBe(false);
        const retried = (await store.runs.claim("w", at(60_001)))!;
        expect(await store.runs.finish(retried, "succeeded", [], null, at(60_002))).toBe(true);
        expect(await store.alerts.pending(10)).toEqual([]);
        // Chosen: the first failed attempt records the alert at once, with when the next one runs.
        await store.alerts.saveSettings({ channel, windowMinutes: 15, triggerThreshold: 3, autoPause: false, autoPauseAfter: 5, alertOnRetry: true }, iso());
        const runId = await fail("b", 100_000);
        const pending = await store.alerts.pending(10);
        expect(pending).toHaveLength(1);
        expect(pending[0]).toMatchObject({ kind: "failure", runId, appletId: "b", error: "answered 503", detail: { status: "retrying", attempt: 1, max_attempts: 3, next_attempt_at: iso(160_000) } });
        expect(await store.applets.get("b")).toMatchObject({ alertOpen: true, failureStreak: 0 });
        // The second attempt fails again: no second alert for the same run.
        const second = (await store.runs.claim("w", at(160_000)))!;
        expect(second).toMatchObject({ id: runId, attempt: 2 });
        expect(await store.runs.retryLater(second, [], "answered 503", at(220_000), at(160_000))).toBe(true);
        expect(await store.alerts.pending(10)).toHaveLength(1);
        // The third attempt succeeds: the recovery notice.
        const third = (await store.runs.claim("w", at(220_000)))!;
        expect(await store.runs.finish(third, "succeeded", [], null, at(220_001))).toBe(true);
        expect((await store.alerts.pending(10)).map((a) => [a.kind, a.runId])).toEqual([
          ["failure", runId],
          ["recovery", runId],
        ]);
        expect((await store.applets.get("b"))!.alertOpen).toBe(false);
      });

      test("no channel: nothing is recorded, but auto-pause still disables after N with its reason; enabling clears it and the streak", async () => {
        const store = await fresh();
        await store.alerts.saveSettings({ channel: null, windowMinutes: 15, triggerThreshold: 3, autoPause: true, autoPauseAfter: 2 }, iso());
        await addApplet(store, "a");
        await settle(store, "a", "failed", 1);
        expect((await store.applets.get("a"))!.enabled).toBe(true);
        await settle(store, "a", "failed", 2);
        expect(await store.applets.get("a")).toMatchObject({ enabled: false, pausedReason: "Paused after 2 failed runs in a row", pausedAt: iso(2) });
        expect(await store.alerts.pending(10)).toEqual([]);
        expect(await store.applets.setEnabled("a", true, iso(3))).toBe(true);
        expect(await store.applets.get("a")).toMatchObject({ enabled: true, pausedReason: null, pausedAt: null, failureStreak: 0 });
      });

      test("savePolled crossing the threshold records one trigger alert, staying above records none, back to 0 one recovery", async () => {
        const store = await fresh();
        await withChannel(store, { triggerThreshold: 3 });
        await addApplet(store, "r", { triggerType: "rss" });
        await store.triggerState.setNextRunAt("r", iso(), iso());
        const poll = (n: number, ms: number) =>
          store.triggerState.savePolled("r", { ...emptyTriggerState(), lastPolledAt: iso(ms), lastError: n ? "feed answered 404" : null, errorCount: n }, iso(ms));
        for (const [i, n] of [1, 2, 3, 4, 5].entries()) expect(await poll(n, i)).toBe(true);
        await poll(0, 10);
        await poll(0, 11);
        expect((await store.alerts.pending(10)).map((p) => [p.kind, p.error, p.detail])).toEqual([
          ["trigger", "feed answered 404", { failures: 3 }],
          ["recovery", null, { of: "trigger" }],
        ]);
      });

      test("beginSend is won once and folds the others; markSent/markFailed; stale sends; recent leaves folded ones out", async () => {
        const store = await fresh();
        await withChannel(store);
        await addApplet(store, "a");
        for (let i = 1; i <= 3; i++) await settle(store, "a", "failed", i);
        const [x, y, z] = await store.alerts.pending(10);
        expect(await store.alerts.lastDispatchedAt("a")).toBeNull();
        expect(await store.alerts.beginSend(z!.id, [x!.id, y!.id], '{"title":"t"}', "slack", iso(10), iso(130))).toBe(true);
        expect(await store.alerts.beginSend(z!.id, [], "again", "slack", iso(11), iso(131))).toBe(false);
        expect(await store.alerts.pending(10)).toEqual([]);
        expect(await store.alerts.foldedCount(z!.id)).toBe(2);
        expect(await store.alerts.lastDispatchedAt("a")).toBe(iso(10));
        expect(await store.alerts.stale(iso(100))).toEqual([]);
        const [stale] = await store.alerts.stale(iso(200));
        expect(stale).toMatchObject({ id: z!.id, status: "sending", message: '{"title":"t"}', lockedUntil: iso(130) });
        expect(await store.alerts.relock(z!.id, iso(130), iso(400), iso(200))).toBe(true);
        expect(await store.alerts.relock(z!.id, iso(130), iso(400), iso(200))).toBe(false);
        await store.alerts.markFailed(z!.id, "403 invalid_token [redacted]", iso(201));
        const [shown, ...rest] = await store.alerts.recent(10);
        expect(rest).toEqual([]);
        expect(shown).toMatchObject({ id: z!.id, status: "failed", providerAnswer: "403 invalid_token [redacted]", channelType: "slack", lockedUntil: null });
        await store.alerts.markSent(z!.id, iso(300));
        expect((await store.alerts.recent(10))[0]).toMatchObject({ status: "sent", sentAt: iso(300), providerAnswer: null });
        const testId = await store.alerts.insert({ appletId: null, kind: "test", runId: null, error: null, detail: {} }, iso(400));
        await store.alerts.skip([testId], "no channel", iso(401));
        expect((await store.alerts.recent(1))[0]).toMatchObject({ id: testId, status: "skipped", providerAnswer: "no channel", appletName: null });
        // Retention: done alerts before the bound go (folded ones too), pending ones stay.
        await settle(store, "a", "failed", 500);
        expect(await store.alerts.deleteBefore(iso(450), 2)).toBe(2);
        expect(await store.alerts.deleteBefore(iso(450), 100)).toBe(2);
        expect(await store.alerts.deleteBefore(iso(1000), 100)).toBe(0);
        expect((await store.alerts.pending(10)).length).toBe(1);
      });
    });

    // ---------------------------------------------------------------- applets

    describe("applets", () => {
      test("insert, get, list in created order, update keeps counters, setEnabled, delete", async () => {
        const store = await fresh();
        await addApplet(store, "b", { createdAt: iso(1) });
        await addApplet(store, "a", { createdAt: iso(2) });
        const a = (await store.applets.get("a"))!;
        expect(a).toMatchObject({ id: "a", name: "Applet a", enabled: true, triggerType: "webhook", runCount: 0, lastFiredAt: null, createdAt: iso(2), updatedAt: iso(2) });
        expect(a.definition).toEqual(definition);
        expect((await store.applets.list()).map((x) => x.id)).toEqual(["b", "a"]);
        expect(await store.applets.update({ id: "a", name: "Renamed", enabled: false, triggerType: "webhook", definition, webhookToken: a.webhookToken, now: iso(5) })).toBe(true);
        expect(await store.applets.get("a")).toMatchObject({ name: "Renamed", enabled: false, createdAt: iso(2), updatedAt: iso(5) });
        expect(await store.applets.update({ id: "nope", name: "x", enabled: true, triggerType: "webhook", definition, webhookToken: token(), now: iso() })).toBe(false);
        expect(await store.applets.setEnabled("a", true, iso(6))).toBe(true);
        expect(await store.applets.setEnabled("nope", true, iso(6))).toBe(false);
        expect(await store.applets.get("a")).toMatchObject({ enabled: true, updatedAt: iso(6) });
        expect(await store.applets.delete("a")).toBe(true);
        expect(await store.applets.delete("a")).toBe(false);
        expect(await store.applets.get("a")).toBeNull();
      });

      test("tags are stored as given, [] by default; an update without tags keeps them, with tags replaces them", async () => {
        const store = await fresh();
        await addApplet(store, "plain");
        expect((await store.applets.get("plain"))!.tags).toEqual([]);
        await store.applets.insert({ id: "t", name: "t", enabled: true, triggerType: "webhook", definition, webhookToken: token(), now: iso(), tags: ["Work", "finance/receipts"] });
        expect((await store.applets.get("t"))!.tags).toEqual(["Work", "finance/receipts"]);
        const t = (await store.applets.get("t"))!;
        await store.applets.update({ id: "t", name: "renamed", enabled: true, triggerType: "webhook", definition, webhookToken: t.webhookToken, now: iso(1) });
        expect(await store.applets.get("t")).toMatchObject({ name: "renamed", tags: ["Work", "finance/receipts"] });
        await store.applets.update({ id: "t", name: "renamed", enabled: true, triggerType: "webhook", definition, webhookToken: t.webhookToken, now: iso(2), tags: [] });
        expect((await store.applets.get("t"))!.tags).toEqual([]);
        expect((await store.applets.list()).map((a) => a.tags)).toEqual([[], []]);
      });

      test("insert stores version 1 and every update the next, with author and source, in the same transaction; setEnabled stores none", async () => {
        const store = await fresh();
        const user = { kind: "user" as const, id: "u1", label: "owner@example.com" };
        await store.applets.insert({ id: "a", name: "First", enabled: true, triggerType: "webhook", definition, webhookToken: token(), now: iso(1), author: user });
        expect((await store.applets.get("a"))!.version).toBe(1);
        const a = (await store.applets.get("a"))!;
        const changed = { ...definition, actions: [{ type: "http", config: { url: "https://example.com/v2" } }] };
        const tokenAuthor = { kind: "token" as const, id: "t1", label: "deploy" };
        expect(await store.applets.update({ ...a, name: "Second", enabled: false, definition: changed, now: iso(2), author: tokenAuthor })).toBe(true);
        expect(await store.applets.setEnabled("a", true, iso(3))).toBe(true);
        expect(await store.applets.update({ ...a, definition, now: iso(4), author: user, source: "restore", restoredFrom: 1 })).toBe(true);
        // No version for an applet that does not exist.
        expect(await store.applets.update({ ...a, id: "nope", now: iso(5) })).toBe(false);
        expect((await store.applets.get("a"))!.version).toBe(3);
        expect((await store.applets.list()).map((x) => x.version)).toEqual([3]);
        const versions = await store.applets.versions("a");
        expect(versions).toEqual([
          { appletId: "a", version: 3, name: "First", enabled: true, definition, source: "restore", restoredFrom: 1, author: user, createdAt: iso(4) },
          { appletId: "a", version: 2, name: "Second", enabled: false, definition: changed, source: "save", restoredFrom: null, author: tokenAuthor, createdAt: iso(2) },
          { appletId: "a", version: 1, name: "First", enabled: true, definition, source: "create", restoredFrom: null, author: user, createdAt: iso(1) },
        ]);
        expect(await store.applets.version("a", 2)).toEqual(versions[1]);
        expect(await store.applets.version("a", 9)).toBeNull();
        expect(await store.applets.versions("nope")).toEqual([]);
        // Without an author the save is whenthen's own.
        await addApplet(store, "b");
        expect((await store.applets.version("b", 1))!.author).toEqual({ kind: "system", id: null, label: "whenthen" });
        // A save that fails writes no version either (a duplicate webhook token).
        await expect(store.applets.update({ ...a, webhookToken: (await store.applets.get("b"))!.webhookToken, now: iso(6) })).rejects.toThrow();
        expect((await store.applets.versions("a")).map((v) => v.version)).toEqual([3, 2, 1]);
        // Inside a unit of work the row and its version roll back together.
        await expect(
          store.transaction(async (tx) => {
            await tx.applets.update({ ...a, name: "Rolled back", now: iso(7) });
            throw new Error("abort");
          }),
        ).rejects.toThrow("abort");
        expect((await store.applets.get("a"))!.name).toBe("First");
        expect((await store.applets.versions("a")).map((v) => v.version)).toEqual([3, 2, 1]);
        // The history goes with the applet.
        expect(await store.applets.delete("a")).toBe(true);
        expect(await store.applets.versions("a")).toEqual([]);
      });

      test("rewriteVersion replaces one stored version's definition and nothing else: no new version, the applet, its author and time kept", async () => {
        const store = await fresh();
        const secretDef = { ...definition, trigger: { type: "webhook", config: { verify: "github", hmac_secret: "whsec_literal" } } };
        await store.applets.insert({ id: "a", name: "First", enabled: true, triggerType: "webhook", definition: secretDef, webhookToken: token(), now: iso(1) });
        const a = (await store.applets.get("a"))!;
        await store.applets.update({ ...a, definition, now: iso(2) });
        const purged = { ...definition, trigger: { type: "webhook", config: { verify: "github", hmac_secret: "[credential purged]" } } };
        expect(await store.applets.rewriteVersion("a", 1, purged, iso(3))).toBe(true);
        expect(await store.applets.rewriteVersion("a", 9, purged, iso(3))).toBe(false);
        expect(await store.applets.rewriteVersion("nope", 1, purged, iso(3))).toBe(false);
        expect(await store.applets.version("a", 1)).toMatchObject({ version: 1, definition: purged, source: "create", createdAt: iso(1) });
        expect((await store.applets.versions("a")).map((v) => v.version)).toEqual([2, 1]);
        expect((await store.applets.get("a"))!.definition).toEqual(definition);
        expect(JSON.stringify(await store.applets.versions("a"))).not.toContain("whsec_literal");
      });

      test("the claim records the applet's current version on the run; a retry claimed after a save records the newer one; ingestSkipped the version at ingest", async () => {
        const store = await fresh();
        await addApplet(store, "a");
        const ingested = (await store.runs.ingest(input("a")))!;
        expect((await store.runs.get(ingested.runId))!.appletVersion).toBeNull();
        const a = (await store.applets.get("a"))!;
        await store.applets.update({ ...a, now: iso(1) });
        const claimed = (await store.runs.claim("w1", at(10)))!;
        expect(claimed.appletVersion).toBe(2);
        expect((await store.runs.get(claimed.id))!.appletVersion).toBe(2);
        expect(await store.runs.retryLater(claimed, [], "boom", at(20), at(11))).toBe(true);
        await store.applets.update({ ...a, now: iso(12) });
        const again = (await store.runs.claim("w1", at(30)))!;
        expect([again.id, again.appletVersion]).toEqual([claimed.id, 3]);
        expect(await store.runs.finish(again, "succeeded", [], null, at(31))).toBe(true);
        // Later saves leave the finished run's version alone.
        await store.applets.update({ ...a, now: iso(40) });
        expect((await store.runs.get(claimed.id))!.appletVersion).toBe(3);
        const skipped = (await store.runs.ingestSkipped(input("a"), "skipped: overlap"))!;
        expect((await store.runs.get(skipped.runId))!.appletVersion).toBe(4);
      });

      test("webhook tokens are unique; byWebhookToken and setWebhookToken", async () => {
        const store = await fresh();
        await addApplet(store, "a");
        await addApplet(store, "b");
        const a = (await store.applets.get("a"))!;
        const b = (await store.applets.get("b"))!;
        expect(await store.applets.byWebhookToken(a.webhookToken)).toEqual({ id: "a", name: "Applet a" });
        expect(await store.applets.byWebhookToken("no-such-token")).toBeNull();
        await expect(store.applets.setWebhookToken("b", a.webhookToken)).rejects.toThrow();
        await expect(store.applets.insert({ id: "c", name: "c", enabled: true, triggerType: "webhook", definition, webhookToken: b.webhookToken, now: iso() })).rejects.toThrow();
        expect(await store.applets.setWebhookToken("b", "fresh-token-value")).toBe(true);
        expect(await store.applets.byWebhookToken("fresh-token-value")).toEqual({ id: "b", name: "Applet b" });
      });

      test("forHook reads the hook columns of any applet by id; listByTriggerType only enabled ones", async () => {
        const store = await fresh();
        await addApplet(store, "hook");
        await addApplet(store, "mail", { triggerType: "email" });
        await addApplet(store, "mail-off", { triggerType: "email", enabled: false });
        const hook = (await store.applets.forHook("hook"))!;
        expect(hook).toMatchObject({ id: "hook", enabled: true });
        expect(JSON.parse(hook.definition)).toEqual(definition);
        expect(await store.applets.forHook("mail")).toMatchObject({ id: "mail", enabled: true });
        expect(await store.applets.forHook("missing")).toBeNull();
        expect((await store.applets.listByTriggerType("email")).map((a) => a.id)).toEqual(["mail"]);
        expect((await store.applets.listByTriggerType("email", { includeDisabled: true })).map((a) => a.id).sort()).toEqual(["mail", "mail-off"]);
      });

      test("setListening is read with the hook columns, is not a save (no version, updated_at kept); takeListening ends it for exactly one caller, and not once expired", async () => {
        const store = await fresh();
        await addApplet(store, "hook");
        const before = (await store.applets.get("hook"))!;
        expect((await store.applets.forHook("hook"))!.listenUntil).toBeNull();
        expect(await store.applets.setListening("hook", iso(120_000))).toBe(true);
        expect((await store.applets.forHook("hook"))!.listenUntil).toBe(iso(120_000));
        const after = (await store.applets.get("hook"))!;
        expect([after.updatedAt, after.version]).toEqual([before.updatedAt, before.version]);
        expect(await store.applets.versions("hook")).toHaveLength(1);
        // Past its end nothing is taken; within it, one of two requests at once wins.
        expect(await store.applets.takeListening("hook", iso(120_000))).toBe(false);
        const takes = await Promise.all([store.applets.takeListening("hook", iso(1_000)), store.applets.takeListening("hook", iso(1_000))]);
        expect(takes.sort()).toEqual([false, true]);
        expect((await store.applets.forHook("hook"))!.listenUntil).toBeNull();
        await store.applets.setListening("hook", iso(60_000));
        expect(await store.applets.setListening("hook", null)).toBe(true);
        expect(await store.applets.takeListening("hook", iso())).toBe(false);
        expect(await store.applets.setListening("missing", iso(60_000))).toBe(false);
      });

      test("deleting an applet deletes its events, runs and trigger state (cascade); eventIds lists its events", async () => {
        const store = await fresh();
        await addApplet(store, "a");
        const one = (await store.runs.ingest(input("a")))!;
        const two = (await store.runs.ingest(input("a")))!;
        await store.triggerState.setNextRunAt("a", iso(60_000), iso());
        expect((await store.applets.eventIds("a")).sort()).toEqual([one.eventId, two.eventId].sort());
        await store.applets.delete("a");
        expect(await store.runs.get(one.runId)).toBeNull();
        expect(await store.runs.event(one.eventId)).toBeNull();
        expect(await store.triggerState.get("a")).toBeNull();
      });
    });

    // ---------------------------------------------------------------- queue

    describe("queue", () => {
      test("recentEvents: one applet's latest events, newest first (received_at, then id), payload parsed, at most limit", async () => {
        const store = await fresh();
        await addApplet(store, "a");
        await addApplet(store, "b");
        const old = (await store.runs.ingest(input("a", { payloadJson: '{"n":"old"}', receivedAt: iso(1), source: "webhook" })))!;
        const mid = (await store.runs.ingest(input("a", { payloadJson: '{"n":"mid"}', receivedAt: iso(2), source: "manual" })))!;
        const last = (await store.runs.ingest(input("a", { payloadJson: '{"n":"last","deep":{"x":[1,2]}}', receivedAt: iso(3) })))!;
        await store.runs.ingest(input("b", { receivedAt: iso(9) }));
        expect(await store.runs.recentEvents("a", 10)).toEqual([
          { id: last.eventId, source: "webhook", receivedAt: iso(3), payload: { n: "last", deep: { x: [1, 2] } } },
          { id: mid.eventId, source: "manual", receivedAt: iso(2), payload: { n: "mid" } },
          { id: old.eventId, source: "webhook", receivedAt: iso(1), payload: { n: "old" } },
        ]);
        expect((await store.runs.recentEvents("a", 2)).map((e) => e.id)).toEqual([last.eventId, mid.eventId]);
        // Same received_at: the larger id first.
        const tied = [(await store.runs.ingest(input("b", { receivedAt: iso(20) })))!, (await store.runs.ingest(input("b", { receivedAt: iso(20) })))!];
        expect((await store.runs.recentEvents("b", 2)).map((e) => e.id)).toEqual(tied.map((t) => t.eventId).sort().reverse());
        expect(await store.runs.recentEvents("missing", 10)).toEqual([]);
      });

      test("ingest stores the event and one queued run due at received_at; an unknown applet throws", async () => {
        const store = await fresh();
        await addApplet(store, "a");
        const r = (await store.runs.ingest(input("a", { payloadJson: '{"hello":"world"}', source: "manual" })))!;
        expect(await store.runs.event(r.eventId)).toEqual({ id: r.eventId, appletId: "a", source: "manual", dedupeKey: null, payload: { hello: "world" }, receivedAt: iso() });
        expect(await store.runs.get(r.runId)).toMatchObject({ id: r.runId, appletId: "a", eventId: r.eventId, status: "queued", attempt: 1, maxAttempts: 3, nextAttemptAt: iso(), lockedBy: null, startedAt: null, finishedAt: null, error: null, steps: [], createdAt: iso(), updatedAt: iso() });
        await expect(store.runs.ingest(input("missing"))).rejects.toThrow();
      });

      test("idempotency keys: a dedupe key is unique per applet, null never dedupes, a caller's event id is kept", async () => {
        const store = await fresh();
        await addApplet(store, "a");
        await addApplet(store, "b");
        expect(await store.runs.ingest(input("a", { dedupeKey: "k1", eventId: "ev-chosen" }))).toEqual({ eventId: "ev-chosen", runId: expect.any(String) });
        expect(await store.runs.ingest(input("a", { dedupeKey: "k1" }))).toBeNull();
        expect(await store.runs.ingest(input("b", { dedupeKey: "k1" }))).not.toBeNull();
        expect(await store.runs.ingest(input("a"))).not.toBeNull();
        expect(await store.runs.ingest(input("a"))).not.toBeNull();
        expect((await store.applets.eventIds("a")).length).toBe(3);
      });

      test("firstOfDedupeKey names the event a key was stored with and its first run; statuses reads many runs at once", async () => {
        const store = await fresh();
        await addApplet(store, "a");
        await addApplet(store, "b");
        const first = (await store.runs.ingest(input("a", { dedupeKey: "delivery-1" })))!;
        expect(await store.runs.firstOfDedupeKey("a", "delivery-1")).toEqual({ eventId: first.eventId, runId: first.runId });
        expect(await store.runs.firstOfDedupeKey("b", "delivery-1")).toBeNull();
        expect(await store.runs.firstOfDedupeKey("a", "delivery-2")).toBeNull();
        const other = (await store.runs.ingest(input("b")))!;
        const claimed = (await store.runs.claim("w1", at(1000)))!;
        const statuses = await store.runs.statuses([first.runId, other.runId, "no-such-run"]);
        expect(statuses.size).toBe(2);
        expect(statuses.get(claimed.id)).toBe("running");
        expect([...statuses.values()].sort()).toEqual(["queued", "running"]);
        expect((await store.runs.statuses([])).size).toBe(0);
      });

      test("ingestSkipped stores the event with a run that is already skipped (never claimed); activeOf counts queued and running runs", async () => {
        const store = await fresh();
        await addApplet(store, "a");
        expect(await store.runs.activeOf("a")).toEqual({ queued: 0, running: 0 });
        await store.runs.ingest(input("a"));
        await store.runs.ingest(input("a"));
        expect(await store.runs.activeOf("a")).toEqual({ queued: 2, running: 0 });
        await store.runs.claim("w1", at(1000));
        expect(await store.runs.activeOf("a")).toEqual({ queued: 1, running: 1 });
        const skipped = (await store.runs.ingestSkipped(input("a", { dedupeKey: "slot-1" }), "skipped: overlap"))!;
        const run = (await store.runs.get(skipped.runId))!;
        expect(run).toMatchObject({ status: "skipped", error: "skipped: overlap", finishedAt: iso(), eventId: skipped.eventId });
        expect(await store.runs.ingestSkipped(input("a", { dedupeKey: "slot-1" }), "skipped: overlap")).toBeNull();
        expect(await store.runs.activeOf("a")).toEqual({ queued: 1, running: 1 });
        // Never claimed: only the queued one is left to claim after the running one.
        const next = await store.runs.claim("w2", at(2000));
        expect(next).toBeNull();
      });

      test("ingestMany: one result per item in order, a duplicate is null, a row whose applet is gone fails alone", async () => {
        const store = await fresh();
        await addApplet(store, "a");
        const results = await store.runs.ingestMany([input("a", { dedupeKey: "x" }), input("a", { dedupeKey: "x" }), input("gone"), input("a")]);
        expect(results).toHaveLength(4);
        expect(results[0]).toMatchObject({ eventId: expect.any(String), runId: expect.any(String) });
        expect(results[1]).toBeNull();
        expect(results[2]).toBeInstanceOf(Error);
        expect(results[3]).toMatchObject({ runId: expect.any(String) });
        expect((await store.applets.eventIds("a")).length).toBe(2);
      });

      test("claim takes the oldest due run first, skips runs not yet due, and returns null when idle", async () => {
        const store = await fresh();
        for (const id of ["a", "b", "c"]) await addApplet(store, id);
        await store.runs.ingest(input("b", { receivedAt: iso(2) }));
        const oldest = (await store.runs.ingest(input("c", { receivedAt: iso(1) })))!;
        await store.runs.ingest(input("a", { receivedAt: iso(60_000) }));
        const first = (await store.runs.claim("w1", at(10)))!;
        expect(first.id).toBe(oldest.runId);
        expect(first).toMatchObject({ status: "running", lockedBy: "w1", lockedAt: iso(10), startedAt: iso(10), finishedAt: null });
        expect(first.claimToken).toEqual(expect.any(String));
        expect((await store.runs.claim("w1", at(10)))!.appletId).toBe("b");
        // a's run is due at +60 s only.
        expect(await store.runs.claim("w1", at(10))).toBeNull();
        expect((await store.runs.claim("w1", at(60_000)))!.appletId).toBe("a");
      });

      test("one running run per applet: the next run of a busy applet waits, other applets go on", async () => {
        const store = await fresh();
        await addApplet(store, "a");
        await addApplet(store, "b");
        const a1 = (await store.runs.ingest(input("a", { receivedAt: iso(1) })))!;
        const a2 = (await store.runs.ingest(input("a", { receivedAt: iso(2) })))!;
        const b1 = (await store.runs.ingest(input("b", { receivedAt: iso(3) })))!;
        const peer = await peerOf(store);
        const first = (await store.runs.claim("w1", at(10)))!;
        expect(first.id).toBe(a1.runId);
        expect((await peer.runs.claim("w2", at(10)))!.id).toBe(b1.runId);
        expect(await peer.runs.claim("w2", at(10))).toBeNull();
        expect(await store.runs.finish(first, "succeeded", [], null, at(20))).toBe(true);
        expect((await peer.runs.claim("w2", at(20)))!.id).toBe(a2.runId);
      });

      test("a backlog of one applet does not hide the due runs of others", async () => {
        const store = await fresh();
        await addApplet(store, "busy");
        await addApplet(store, "quiet");
        await store.runs.ingestMany(Array.from({ length: 300 }, (_, i) => input("busy", { receivedAt: iso(i) })));
        const quiet = (await store.runs.ingest(input("quiet", { receivedAt: iso(500) })))!;
        expect((await store.runs.claim("w1", at(1_000)))!.appletId).toBe("busy");
        expect((await store.runs.claim("w1", at(1_000)))!.id).toBe(quiet.runId);
        expect(await store.runs.claim("w1", at(1_000))).toBeNull();
      });

      test("claim tokens fence every settle: a holder whose run was recovered and claimed again changes nothing", async () => {
        const store = await fresh();
        await addApplet(store, "a");
        const { runId } = (await store.runs.ingest(input("a")))!;
        const stale = (await store.runs.claim("dead", at(1)))!;
        // "dead" has no worker row: its run goes back at once, and "live" claims it.
        expect(await store.runs.recoverStale({ now: at(2), stuckBefore: at(-600_000) })).toEqual([{ id: runId, appletId: "a", lockedBy: "dead", reason: "lease" }]);
        const current = (await store.runs.claim("live", at(3)))!;
        expect(current.claimToken).not.toBe(stale.claimToken);
        expect(await store.runs.saveSteps(stale, [step("late")], at(4))).toBe(false);
        expect(await store.runs.retryLater(stale, [], "late", at(60_000), at(4))).toBe(false);
        expect(await store.runs.release(stale, at(4))).toBe(false);
        expect(await store.runs.finish(stale, "failed", [], "late", at(4))).toBe(false);
        expect(await store.runs.get(runId)).toMatchObject({ status: "running", lockedBy: "live", steps: [] });
        expect((await store.applets.get("a"))!.runCount).toBe(0);
        expect(await store.runs.finish(current, "succeeded", [step("done")], null, at(5))).toBe(true);
        expect(await store.runs.get(runId)).toMatchObject({ status: "succeeded", lockedBy: null, finishedAt: iso(5), nextAttemptAt: null, steps: [step("done")] });
        expect(await store.applets.get("a")).toMatchObject({ runCount: 1, lastFiredAt: iso(5) });
        expect(await store.runs.finish(current, "succeeded", [], null, at(6))).toBe(false);
      });

      test("saveSteps records progress; finish with null steps keeps them", async () => {
        const store = await fresh();
        await addApplet(store, "a");
        const { runId } = (await store.runs.ingest(input("a")))!;
        const run = (await store.runs.claim("w1", at(1)))!;
        expect(await store.runs.saveSteps(run, [step("first")], at(2))).toBe(true);
        expect(await store.runs.get(runId)).toMatchObject({ steps: [step("first")], updatedAt: iso(2) });
        expect(await store.runs.finish(run, "failed", null, "broken", at(3))).toBe(true);
        expect(await store.runs.get(runId)).toMatchObject({ status: "failed", error: "broken", steps: [step("first")] });
      });

      test("retries: retryLater requeues with attempt + 1, not claimable before its due time, then claimable", async () => {
        const store = await fresh();
        await addApplet(store, "a");
        const { runId } = (await store.runs.ingest(input("a")))!;
        const run = (await store.runs.claim("w1", at(1)))!;
        expect(await store.runs.retryLater(run, [step("s")], "answered 500", at(30_000), at(2))).toBe(true);
        expect(await store.runs.get(runId)).toMatchObject({ status: "queued", attempt: 2, nextAttemptAt: iso(30_000), error: "answered 500", lockedBy: null, steps: [step("s")] });
        expect(await store.runs.claim("w1", at(29_999))).toBeNull();
        const again = (await store.runs.claim("w1", at(30_000)))!;
        expect(again).toMatchObject({ id: runId, attempt: 2 });
      });

      test("a run waiting for its retry shows as retrying: statsByApplet's last status, and the list's retrying filter apart from queued", async () => {
        const store = await fresh();
        await addApplet(store, "a");
        const fresh1 = (await store.runs.ingest(input("a", { receivedAt: iso(0) })))!.runId;
        const run = (await store.runs.claim("w1", at(1)))!;
        expect(await store.runs.retryLater(run, [], "answered 500", at(30_000), at(2))).toBe(true);
        const stats = new Map((await store.runs.statsByApplet(iso(0))).map((s) => [s.applet_id, s]));
        expect(stats.get("a")).toMatchObject({ last_status: "retrying" });
        const waiting = (await store.runs.ingest(input("a", { receivedAt: iso(5) })))!.runId;
        expect((await store.runs.list({ status: "retrying" })).runs.map((r) => r.id)).toEqual([fresh1]);
        expect((await store.runs.list({ status: "queued" })).runs.map((r) => r.id)).toEqual([waiting]);
        // The newest run is a fresh one now: the applet's last run is queued again.
        expect(new Map((await store.runs.statsByApplet(iso(0))).map((s) => [s.applet_id, s])).get("a")).toMatchObject({ last_status: "queued" });
      });

      test("release hands a run back with the same attempt; retry and replay from the Run page", async () => {
        const store = await fresh();
        await addApplet(store, "a");
        const { runId, eventId } = (await store.runs.ingest(input("a")))!;
        const run = (await store.runs.claim("w1", at(1)))!;
        expect(await store.runs.release(run, at(2))).toBe(true);
        expect(await store.runs.get(runId)).toMatchObject({ status: "queued", attempt: 1, startedAt: null, lockedBy: null });
        expect(await store.runs.retry(runId, at(3))).toBe(false);
        const again = (await store.runs.claim("w1", at(3)))!;
        await store.runs.finish(again, "dead", [], "gave up", at(4));
        expect(await store.runs.retry(runId, at(5))).toBe(true);
        expect(await store.runs.get(runId)).toMatchObject({ status: "queued", attempt: 2, nextAttemptAt: iso(5), finishedAt: null });
        const replayId = (await store.runs.replay(runId, at(6)))!;
        expect(await store.runs.get(replayId)).toMatchObject({ status: "queued", attempt: 1, eventId, steps: [], createdAt: iso(6) });
        expect(await store.runs.replay("missing", at(6))).toBeNull();
        // The claim says which is the replay: the retried original is not, the later run of its event is.
        const original = (await store.runs.claim("w1", at(6)))!;
        expect(original).toMatchObject({ id: runId, replay: false, event: { id: eventId, appletId: "a", source: "webhook", receivedAt: iso() } });
        await store.runs.finish(original, "succeeded", [], null, at(7));
        expect(await store.runs.claim("w1", at(7))).toMatchObject({ id: replayId, replay: true, event: { id: eventId } });
      });

      test("a claim carries the run's event and replay flag on every path; a replay in the same millisecond is one", async () => {
        const store = await fresh();
        await addApplet(store, "a");
        const r1 = (await store.runs.ingest(input("a", { payloadJson: JSON.stringify({ order: 1 }), dedupeKey: "d1", receivedAt: iso(1) })))!;
        const r2 = (await store.runs.ingest(input("a", { payloadJson: JSON.stringify({ order: 2, items: ["x", "ü"] }), receivedAt: iso(2) })))!;
        const first = (await store.runs.claim("w1", at(10)))!;
        expect(first).toMatchObject({ id: r1.runId, replay: false, event: { id: r1.eventId, appletId: "a", source: "webhook", dedupeKey: "d1", payload: { order: 1 }, receivedAt: iso(1) } });
        expect(first.readError).toBeUndefined();
        expect(first.applet).toEqual({ id: "a", name: "Applet a", definition: { ...definition }, version: first.appletVersion, updatedAt: iso() });
        expect(first.appletVersion).toBeGreaterThan(0);
        // A save after the claim is the next claim's: this one keeps the version it recorded.
        const { webhookToken } = (await store.applets.get("a"))!;
        const edited = { ...definition, actions: [{ type: "http", config: { url: "https://example.com/edited" } }] };
        expect(await store.applets.update({ id: "a", name: "Edited", enabled: true, triggerType: "webhook", definition: edited, webhookToken, now: iso(15) })).toBe(true);
        expect(first.applet).toMatchObject({ name: "Applet a", definition: { ...definition } });
        // A replay created in the very millisecond of its original is still a replay.
        const sameMs = (await store.runs.replay(r2.runId, at(2)))!;
        // finishAndClaim's own statement (a success) and its transaction (a failure) both carry it.
        const viaFast = (await store.runs.finishAndClaim(first, "succeeded", [], null, at(20), "w1")).next!;
        expect(viaFast).toMatchObject({ id: r2.runId, replay: false, event: { id: r2.eventId, payload: { order: 2, items: ["x", "ü"] } } });
        expect(viaFast.applet).toEqual({ id: "a", name: "Edited", definition: edited, version: first.appletVersion! + 1, updatedAt: iso(15) });
        expect(viaFast.appletVersion).toBe(first.appletVersion! + 1);
        const viaTx = (await store.runs.finishAndClaim(viaFast, "failed", [], "boom", at(30), "w1")).next!;
        expect(viaTx).toMatchObject({ id: sameMs, replay: true, event: { id: r2.eventId, payload: { order: 2, items: ["x", "ü"] } }, applet: { name: "Edited" } });
        const last = await store.runs.finishAndClaim(viaTx, "succeeded", [], null, at(40), "w1");
        expect(last).toEqual({ ok: true, next: null });
      });

      test("list searches error text and payload text (case-insensitive), with the other filters; a search stops at its scan bound and says where", async () => {
        const store = await fresh();
        await addApplet(store, "a");
        await addApplet(store, "b");
        const fail = async (appletId: string, ms: number, payload: unknown, error: string | null) => {
          const { runId } = (await store.runs.ingest(input(appletId, { payloadJson: JSON.stringify(payload), receivedAt: iso(ms) })))!;
          const run = (await store.runs.claim("w1", at(ms + 1)))!;
          expect(run.id).toBe(runId);
          await store.runs.finish(run, error ? "failed" : "succeeded", [], error, at(ms + 2));
          return runId;
        };
        const r1 = await fail("a", 1000, { order: { id: 1042, email: "ann@example.com" } }, "Slack answered 500: Internal Error");
        const r2 = await fail("b", 2000, { order: { id: 77 } }, "timed out after 10000 ms");
        const r3 = await fail("a", 3000, { order: { id: 1042 }, note: "second" }, null);
        const r4 = await fail("a", 4000, { text: "nothing here" }, "slack answered 404");
        const ids = async (f: Parameters<Store["runs"]["list"]>[0]) => (await store.runs.list(f)).runs.map((r) => r.id);
        expect(await ids({ errorText: "SLACK ANSWERED" })).toEqual([r4, r1]);
        expect(await ids({ errorText: "timed out" })).toEqual([r2]);
        expect(await ids({ payloadText: "1042" })).toEqual([r3, r1]);
        expect(await ids({ payloadText: "ANN@EXAMPLE" })).toEqual([r1]);
        expect(await ids({ payloadText: "1042", errorText: "500" })).toEqual([r1]);
        expect(await ids({ payloadText: "1042", status: "succeeded" })).toEqual([r3]);
        expect(await ids({ errorText: "slack", appletId: "b" })).toEqual([]);
        expect(await store.runs.list({ errorText: "no such error" })).toEqual({ runs: [], nextCursor: null });
        // Pages of a search continue by cursor.
        const p1 = await store.runs.list({ errorText: "slack", limit: 1 });
        expect(p1.runs.map((r) => r.id)).toEqual([r4]);
        expect((await store.runs.list({ errorText: "slack", limit: 1, cursor: p1.nextCursor! })).runs.map((r) => r.id)).toEqual([r1]);
        // Bounded: with a scan of 2 runs, only r4 and r3 are looked at; the page says where it
        // stopped and its cursor continues there, where r1 is found.
        const bounded = await store.runs.list({ errorText: "slack", searchScan: 2 });
        expect(bounded.runs.map((r) => r.id)).toEqual([r4]);
        expect(bounded.searchStoppedAt).toBe(iso(3000));
        const rest = await store.runs.list({ errorText: "slack", searchScan: 2, cursor: bounded.nextCursor! });
        expect(rest.runs.map((r) => r.id)).toEqual([r1]);
        expect(rest.nextCursor).toBeNull();
        expect(rest.searchStoppedAt).toBeUndefined();
      });

      test("ofEvent lists an event's runs oldest first: the original, then its replays", async () => {
        const store = await fresh();
        await addApplet(store, "a");
        const { runId, eventId } = (await store.runs.ingest(input("a", { receivedAt: iso(1) })))!;
        const run = (await store.runs.claim("w1", at(2)))!;
        await store.runs.finish(run, "failed", [], "boom", at(3));
        const replay1 = (await store.runs.replay(runId, at(10)))!;
        const replay2 = (await store.runs.replay(replay1, at(20)))!;
        expect(await store.runs.ofEvent(eventId, 10)).toEqual([
          { id: runId, status: "failed", createdAt: iso(1) },
          { id: replay1, status: "queued", createdAt: iso(10) },
          { id: replay2, status: "queued", createdAt: iso(20) },
        ]);
        expect((await store.runs.ofEvent(eventId, 2)).map((r) => r.id)).toEqual([runId, replay1]);
        expect(await store.runs.ofEvent("missing", 10)).toEqual([]);
      });

      test("bulk retry in one transaction retries the failed and dead runs with retry's semantics and leaves the others", async () => {
        const store = await fresh();
        await addApplet(store, "a");
        await addApplet(store, "b");
        const settle = async (appletId: string, ms: number, status: "failed" | "dead" | "succeeded") => {
          const { runId } = (await store.runs.ingest(input(appletId, { receivedAt: iso(ms) })))!;
          const run = (await store.runs.claim("w1", at(ms + 1)))!;
          await store.runs.finish(run, status, [], status === "succeeded" ? null : "boom", at(ms + 2));
          return runId;
        };
        const failed = await settle("a", 10, "failed");
        const dead = await settle("b", 20, "dead");
        const ok = await settle("a", 30, "succeeded");
        const retried = await store.transaction(async (tx) => {
          const out: string[] = [];
          for (const id of [failed, dead, ok, "missing"]) if (await tx.runs.retry(id, at(100))) out.push(id);
          return out;
        });
        expect(retried).toEqual([failed, dead]);
        expect(await store.runs.get(failed)).toMatchObject({ status: "queued", attempt: 2, nextAttemptAt: iso(100), finishedAt: null });
        expect(await store.runs.get(dead)).toMatchObject({ status: "queued", attempt: 2 });
        expect(await store.runs.get(ok)).toMatchObject({ status: "succeeded", attempt: 1 });
        // A batch that fails rolls back as a whole.
        await expect(
          store.transaction(async (tx) => {
            await tx.runs.retry(failed, at(200));
            throw new Error("stop");
          }),
        ).rejects.toThrow("stop");
        expect(await store.runs.get(failed)).toMatchObject({ status: "queued", attempt: 2 });
      });

      test("stale-lease recovery: runs of a worker whose lease expired go back with their place; a live worker's stay until the stuck bound", async () => {
        const store = await fresh();
        await addApplet(store, "a");
        await addApplet(store, "b");
        const ra = (await store.runs.ingest(input("a", { receivedAt: iso(1) })))!;
        const rb = (await store.runs.ingest(input("b", { receivedAt: iso(2) })))!;
        await store.workers.heartbeat({ id: "gone", hostname: "h1", pid: 1, now: at(0), leaseMs: 30_000, fault: null });
        await store.workers.heartbeat({ id: "alive", hostname: "h2", pid: 2, now: at(0), leaseMs: 600_000, fault: null });
        await store.runs.claim("gone", at(10));
        await store.runs.claim("alive", at(10));
        expect(await store.runs.recoverStale({ now: at(20_000), stuckBefore: at(-600_000) })).toEqual([]);
        expect(await store.runs.recoverStale({ now: at(40_000), stuckBefore: at(-600_000) })).toEqual([{ id: ra.runId, appletId: "a", lockedBy: "gone", reason: "lease" }]);
        expect(await store.runs.get(ra.runId)).toMatchObject({ status: "queued", attempt: 1, nextAttemptAt: iso(1), lockedBy: null });
        // The live worker's run is recovered only past the stuck bound; its own caller (self) only then too.
        expect(await store.runs.recoverStale({ now: at(40_000), stuckBefore: at(5), self: "alive" })).toEqual([]);
        expect(await store.runs.recoverStale({ now: at(40_000), stuckBefore: at(11), self: "alive" })).toEqual([{ id: rb.runId, appletId: "b", lockedBy: "alive", reason: "stuck" }]);
      });

      test("a worker seen gone loses its runs whatever its lease; the caller's own runs none of its slots holds go back once locked before its earliest claim in flight", async () => {
        const store = await fresh();
        await addApplet(store, "a");
        await addApplet(store, "b");
        await addApplet(store, "c");
        const ra = (await store.runs.ingest(input("a", { receivedAt: iso(1) })))!;
        const rb = (await store.runs.ingest(input("b", { receivedAt: iso(2) })))!;
        const rc = (await store.runs.ingest(input("c", { receivedAt: iso(3) })))!;
        await store.workers.heartbeat({ id: "killed", hostname: "h1", pid: 1, now: at(0), leaseMs: 600_000, fault: null, processScope: "h1|boot|ns", sessionLock: 42 });
        await store.workers.heartbeat({ id: "me", hostname: "h2", pid: 2, now: at(0), leaseMs: 600_000, fault: null });
        expect((await store.workers.live(at(1))).find((w) => w.id === "killed")).toMatchObject({ processScope: "h1|boot|ns", sessionLock: 42 });
        await store.runs.claim("killed", at(10));
        await store.runs.claim("me", at(10));
        await store.runs.claim("me", at(20));
        const opts = { now: at(30), stuckBefore: at(-600_000), self: "me" };
        // Live leases, nothing named gone, both of mine held: nothing.
        expect(await store.runs.recoverStale({ ...opts, holding: { ids: [rb.runId, rc.runId], lockedBefore: at(30) } })).toEqual([]);
        expect(await store.runs.recoverStale({ ...opts, gone: ["killed"] })).toEqual([{ id: ra.runId, appletId: "a", lockedBy: "killed", reason: "gone" }]);
        // Run c is held; run b is not, but a claim of mine in flight since 10 could be its: kept.
        expect(await store.runs.recoverStale({ ...opts, holding: { ids: [rc.runId], lockedBefore: at(10) } })).toEqual([]);
        expect(await store.runs.recoverStale({ ...opts, holding: { ids: [rc.runId], lockedBefore: at(15) } })).toEqual([{ id: rb.runId, appletId: "b", lockedBy: "me", reason: "orphan" }]);
        expect(await store.runs.get(rb.runId)).toMatchObject({ status: "queued", attempt: 1, lockedBy: null });
        expect(await store.runs.get(rc.runId)).toMatchObject({ status: "running", lockedBy: "me" });
      });

      test("a claim's start is never stamped before its applet's last finish (the claim's time was taken before it waited)", async () => {
        const store = await fresh();
        await addApplet(store, "a");
        (await store.runs.ingest(input("a", { receivedAt: iso(1) })))!;
        (await store.runs.ingest(input("a", { receivedAt: iso(2) })))!;
        const first = (await store.runs.claim("w1", at(10)))!;
        expect(await store.runs.finish(first, "succeeded", [], null, at(50))).toBe(true);
        // The other worker stamped its claim at 40, then waited while the finish at 50 went in.
        const second = (await store.runs.claim("w2", at(40)))!;
        expect(second.startedAt).toBe(iso(50));
        expect((await store.runs.get(second.id))!.startedAt).toBe(iso(50));
      });

      test("finishAndClaim ends one run and claims the next in one transaction", async () => {
        const store = await fresh();
        await addApplet(store, "a");
        const r1 = (await store.runs.ingest(input("a", { receivedAt: iso(1) })))!;
        const r2 = (await store.runs.ingest(input("a", { receivedAt: iso(2) })))!;
        const run = (await store.runs.claim("w1", at(10)))!;
        const { ok, next } = await store.runs.finishAndClaim(run, "succeeded", [step("x")], null, at(20), "w1");
        expect(ok).toBe(true);
        expect(next).toMatchObject({ id: r2.runId, status: "running", lockedBy: "w1", startedAt: iso(20) });
        expect(await store.runs.get(r1.runId)).toMatchObject({ status: "succeeded", finishedAt: iso(20) });
        // A lost claim still claims the next run (and records nothing for the lost one).
        const lost = await store.runs.finishAndClaim(run, "failed", [], "late", at(30), "w1");
        expect(lost.ok).toBe(false);
        expect(lost.next).toBeNull();
        expect(await store.runs.get(r1.runId)).toMatchObject({ status: "succeeded" });
      });

      test("list pages newest first by keyset cursor and filters by applet, status and dates; changedAfter and statsByApplet", async () => {
        const store = await fresh();
        await addApplet(store, "a");
        await addApplet(store, "b");
        const ids: string[] = [];
        for (let i = 0; i < 5; i++) ids.push((await store.runs.ingest(input(i % 2 ? "b" : "a", { receivedAt: iso(i * 1000) })))!.runId);
        const page1 = await store.runs.list({ limit: 2 });
        expect(page1.runs.map((r) => r.id)).toEqual([ids[4], ids[3]]);
        const page2 = await store.runs.list({ limit: 2, cursor: page1.nextCursor! });
        expect(page2.runs.map((r) => r.id)).toEqual([ids[2], ids[1]]);
        const page3 = await store.runs.list({ limit: 2, cursor: page2.nextCursor! });
        expect(page3).toEqual({ runs: [expect.objectContaining({ id: ids[0] })], nextCursor: null });
        expect((await store.runs.list({ appletId: "b" })).runs.map((r) => r.id)).toEqual([ids[3], ids[1]]);
        expect((await store.runs.list({ from: iso(1000), to: iso(3000) })).runs.map((r) => r.id)).toEqual([ids[3], ids[2], ids[1]]);
        expect((await store.runs.list({ status: "running" })).runs).toEqual([]);
        const changes = await store.runs.changedAfter(iso(2000), "");
        expect(changes.map((c) => c.id)).toEqual([ids[2], ids[3], ids[4]]);
        expect(changes[0]).toEqual({ id: ids[2], applet_id: "a", status: "queued", updated_at: iso(2000) });
        expect((await store.runs.changedAfter(iso(2000), ids[2]!)).map((c) => c.id)).toEqual([ids[3], ids[4]]);
        const stats = new Map((await store.runs.statsByApplet(iso(2000))).map((s) => [s.applet_id, s]));
        expect(Number(stats.get("a")!.runs_24h)).toBe(2);
        expect(stats.get("b")).toMatchObject({ last_status: "queued", last_at: iso(3000) });
      });

      test("statsByApplet counts failed and dead runs of the window; tally counts runs per applet and status, the queue and its oldest due run", async () => {
        const store = await fresh();
        await addApplet(store, "a");
        await addApplet(store, "b");
        expect(await store.runs.tally(iso(0), at(0))).toEqual({ byApplet: [], queued: 0, oldestDueAt: null });
        // a: an old failed run (before the window), a failed and a dead one in it, one succeeded.
        const settle = async (appletId: string, receivedAt: number, status: "failed" | "dead" | "succeeded") => {
          await store.runs.ingest(input(appletId, { receivedAt: iso(receivedAt) }));
          const run = (await store.runs.claim("w1", at(receivedAt + 1)))!;
          expect(await store.runs.finish(run, status, [], status === "succeeded" ? null : "boom", at(receivedAt + 2))).toBe(true);
        };
        await settle("a", 0, "failed");
        await settle("a", 1000, "failed");
        await settle("a", 2000, "dead");
        await settle("a", 3000, "succeeded");
        // c: one running, one queued for later; b: one queued and due long ago.
        await addApplet(store, "c");
        await store.runs.ingest(input("c", { receivedAt: iso(4000) }));
        expect((await store.runs.claim("w1", at(4001)))!.appletId).toBe("c");
        await store.runs.ingest(input("b", { receivedAt: iso(100) }));
        await store.runs.ingest(input("c", { receivedAt: iso(9000) }));
        const stats = new Map((await store.runs.statsByApplet(iso(500))).map((s) => [s.applet_id, s]));
        expect(Number(stats.get("a")!.failed_24h)).toBe(2);
        expect(Number(stats.get("a")!.runs_24h)).toBe(3);
        expect(Number(stats.get("b")!.failed_24h)).toBe(0);
        const tally = await store.runs.tally(iso(500), at(5000));
        const by = (t: typeof tally) => Object.fromEntries(t.byApplet.map((r) => [`${r.appletId}/${r.status}`, Number(r.count)]));
        expect(by(tally)).toEqual({ "a/failed": 1, "a/dead": 1, "a/succeeded": 1, "b/queued": 1, "c/running": 1, "c/queued": 1 });
        expect(Number(tally.queued)).toBe(2);
        // c's queued run is due at 9000, not yet at 5000: the oldest due one is b's.
        expect(tally.oldestDueAt).toBe(iso(100));
        expect((await store.runs.tally(iso(500), at(50))).oldestDueAt).toBeNull();
      });

      test("two workers claiming at once on two connections never get the same run", async () => {
        const store = await fresh();
        for (let i = 0; i < 10; i++) {
          await addApplet(store, `a${i}`);
          await store.runs.ingest(input(`a${i}`, { receivedAt: iso(i) }));
        }
        const peer = await peerOf(store);
        const claimed = await Promise.all(Array.from({ length: 12 }, (_, i) => (i % 2 ? store : peer).runs.claim(`w${i % 2}`, at(100))));
        const ids = claimed.filter((r): r is ClaimedRun => r !== null).map((r) => r.id);
        expect(ids).toHaveLength(10);
        expect(new Set(ids).size).toBe(10);
      });
    });

    // ---------------------------------------------------------------- planned runs

    describe("controls over runs", () => {
      test("runs in different lanes of one applet run side by side, each lane one at a time and in order; runs without controls share the applet's one lane", async () => {
        const store = await fresh();
        await addApplet(store, "a");
        const a1 = (await store.runs.ingest(input("a", { receivedAt: iso(1), controls: { lane: "k:x" } })))!;
        const a2 = (await store.runs.ingest(input("a", { receivedAt: iso(2), controls: { lane: "k:x" } })))!;
        const b1 = (await store.runs.ingest(input("a", { receivedAt: iso(3), controls: { lane: "k:y" } })))!;
        const plain = (await store.runs.ingest(input("a", { receivedAt: iso(4) })))!;
        const at = new Date(iso(10));
        const claimed = [await store.runs.claim("w", at), await store.runs.claim("w", at), await store.runs.claim("w", at), await store.runs.claim("w", at)];
        expect(claimed.map((r) => r?.id ?? null)).toEqual([a1.runId, b1.runId, plain.runId, null]);
        expect(await store.runs.finishAndClaim(claimed[0]!, "succeeded", [], null, at, "w")).toMatchObject({ ok: true, next: { id: a2.runId } });
      });

      test("a rate limit gives each run a start slot: the max-th slot before it plus the period; with overflow drop the run is stored skipped", async () => {
        const store = await fresh();
        await addApplet(store, "a");
        const rate = { max: 2, periodMs: 60_000, overflow: "wait" as const };
        const ids = [];
        for (let n = 0; n < 5; n++) ids.push((await store.runs.ingest(input("a", { receivedAt: iso(n), controls: { lane: "", rate } })))!.runId);
        const due = await Promise.all(ids.map(async (id) => (await store.runs.get(id))!.nextAttemptAt));
        expect(due).toEqual([iso(0), iso(1), new Date(Date.parse(iso(0)) + 60_000).toISOString(), new Date(Date.parse(iso(1)) + 60_000).toISOString(), new Date(Date.parse(iso(0)) + 120_000).toISOString()]);
        expect((await store.fires.list("a", { outcome: "rate_limited", limit: 10 })).entries.map((e) => e.runId).sort()).toEqual(ids.slice(2).sort());
        await addApplet(store, "b");
        const drop = { ...rate, overflow: "drop" as const };
        const kept = [];
        for (let n = 0; n < 3; n++) kept.push((await store.runs.ingest(input("b", { receivedAt: iso(n), controls: { lane: "", rate: drop } })))!.runId);
        expect(await Promise.all(kept.map(async (id) => (await store.runs.get(id))!.status))).toEqual(["queued", "queued", "skipped"]);
        expect((await store.runs.get(kept[2]!))!.error).toBe("skipped: rate limit (2 per 1 min reached; dropped)");
      });

      test("a debounce window: events within it join the run the first opened (due at the window's end), mergedEvents reads them in order; a duplicate joins nothing", async () => {
        const store = await fresh();
        await addApplet(store, "a");
        const first = (await store.runs.ingest(input("a", { receivedAt: iso(0), payloadJson: '{"n":0}', controls: { lane: "", debounceMs: 30_000 } })))!;
        expect((await store.runs.get(first.runId))!.nextAttemptAt).toBe(new Date(Date.parse(iso(0)) + 30_000).toISOString());
        const second = (await store.runs.ingest(input("a", { receivedAt: iso(1), payloadJson: '{"n":1}', dedupeKey: "d", controls: { lane: "", debounceMs: 30_000 } })))!;
        expect(second.runId).toBe(first.runId);
        expect(await store.runs.ingest(input("a", { receivedAt: iso(2), dedupeKey: "d", controls: { lane: "", debounceMs: 30_000 } }))).toBeNull();
        await store.runs.ingest(input("a", { receivedAt: iso(3), payloadJson: '{"n":2}', controls: { lane: "", debounceMs: 30_000 } }));
        expect((await store.runControls.mergedEvents(first.runId)).map((e) => e.payload)).toEqual([{ n: 0 }, { n: 1 }, { n: 2 }]);
        expect((await store.fires.list("a", { outcome: "debounced", limit: 10 })).entries).toHaveLength(2);
        // After the window a new run opens.
        const later = (await store.runs.ingest(input("a", { receivedAt: new Date(Date.parse(iso(0)) + 31_000).toISOString(), controls: { lane: "", debounceMs: 30_000 } })))!;
        expect(later.runId).not.toBe(first.runId);
        expect(await store.runControls.mergedEvents(later.runId)).toHaveLength(1);
        expect(await store.runControls.mergedEvents("missing")).toEqual([]);
      });
    });

    describe("planned runs", () => {
      test("a plan commits with its event: the planned run and its runs row (planned, due_at); a redelivery and a duplicate dedupe key write nothing", async () => {
        const store = await fresh();
        await addApplet(store, "a");
        const first = await ingestPlanned(store, { version: 1, dedupeKey: "k1" });
        const id = "run_a_b1_1_0_";
        expect(await store.plannedRuns.get(id)).toMatchObject({ id, appletId: "a", actionIndex: 0, status: "pending", subjectVersion: 1, dueAt: T0.getTime() + 1000, eventId: first!.eventId });
        expect(await store.runs.get(id)).toMatchObject({ status: "planned", plannedRunId: id, actionIndex: 0, dueAt: iso(1000), reason: null, eventId: first!.eventId });
        // The planned row is never claimed by the queue; the event's own run is.
        expect((await store.runs.claim("w", at(5000)))?.id).toBe(first!.runId);
        // Same event again (no dedupe key): same ids, nothing new.
        await ingestPlanned(store, { version: 1 });
        expect(await store.plannedRuns.list("a", { limit: 10 })).toHaveLength(1);
        // A duplicate dedupe key stores neither the event nor its plan.
        expect(await store.runs.ingest(input("a", { dedupeKey: "k1", plan: planOf([plannedRun("a", "x", { subject: "b9" })], { key: "a:booking:b9", version: 1 }) }))).toBeNull();
        expect(await store.plannedRuns.get("run_a_b9_1_0_")).toBeNull();
        // A plan with a skipped run stores it skipped with its reason and warning, on both rows.
        const eventId = nextEventId();
        await store.runs.ingest(input("a", { eventId, plan: planOf([plannedRun("a", eventId, { subject: "b2", status: "skipped", reason: "no_anchor" })], { key: "a:booking:b2", version: 1 }) }));
        expect(await store.runs.get("run_a_b2_1_0_")).toMatchObject({ status: "skipped", reason: "no_anchor", error: "no anchor: trigger.body.starts_at is missing", finishedAt: iso() });
        expect(await store.plannedRuns.get("run_a_b2_1_0_")).toMatchObject({ status: "skipped", reason: "no_anchor" });
      });

      test("a superseding event cancels older pending runs (both rows, superseded) and plans its own; a cancellation plans nothing; an older event is refused", async () => {
        const store = await fresh();
        await addApplet(store, "a");
        await ingestPlanned(store, { version: 1 });
        await ingestPlanned(store, { version: 2, supersedes: true, dueMs: 2000 });
        expect(await store.runs.get("run_a_b1_1_0_")).toMatchObject({ status: "cancelled", reason: "superseded", finishedAt: iso() });
        expect(await store.plannedRuns.get("run_a_b1_1_0_")).toMatchObject({ status: "cancelled", reason: "superseded" });
        expect(await store.plannedRuns.get("run_a_b1_2_0_")).toMatchObject({ status: "pending", dueAt: T0.getTime() + 2000 });
        // The same superseding event redelivered cancels nothing of its own plan.
        expect(await store.plannedRuns.apply(planOf([plannedRun("a", nextEventId(), { version: 2, dueMs: 2000 })], { key: "a:booking:b1", version: 2, supersedes: true }))).toEqual({ inserted: [], cancelled: [] });
        // Cancellation (version 3): cancels, plans nothing.
        await ingestPlanned(store, { version: 3, supersedes: true, runs: 0 });
        expect(await store.plannedRuns.list("a", { status: "pending", limit: 10 })).toEqual([]);
        // The created event (version 1) delivered again after all that: refused.
        await ingestPlanned(store, { version: 1 });
        expect((await store.plannedRuns.list("a", { limit: 10 })).map((r) => [r.subjectVersion, r.status])).toEqual([
          [1, "cancelled"],
          [2, "cancelled"],
        ]);
        // /api/runs filters: status and reason.
        const cancelled = await store.runs.list({ status: "cancelled", reason: "superseded" });
        expect(cancelled.runs.map((r) => r.id).sort()).toEqual(["run_a_b1_1_0_", "run_a_b1_2_0_"]);
        expect((await store.runs.list({ status: "planned" })).runs).toEqual([]);
        expect(await store.plannedRuns.latest("a:booking:b1", "0")).toEqual({ subjectVersion: 2, anchorAt: T0.getTime() + 86_400_000, reachedVersion: 3 });
      });

      test("claimDue takes due runs only, fenced settles: dispatch queues the runs row once; skip, defer, retry; a lease that ran out is claimed again", async () => {
        const store = await fresh();
        await addApplet(store, "a");
        for (const [subject, dueMs] of [["b1", 1000], ["b2", 2000], ["b3", 60_000]] as const) await ingestPlanned(store, { subject, version: 1, dueMs });
        const claimed = await store.plannedRuns.claimDue(T0.getTime() + 5000, { ...LEASE, limit: 10, token: "t1" });
        expect(claimed.map((r) => [r.subjectId, r.status, r.attempts, r.claimToken, r.leaseUntil])).toEqual([
          ["b1", "running", 1, "t1", T0.getTime() + 65_000],
          ["b2", "running", 1, "t1", T0.getTime() + 65_000],
        ]);
        const [one, two] = claimed as [ClaimedPlannedRun, ClaimedPlannedRun];
        expect(await store.plannedRuns.dispatch(one, T0.getTime() + 5001)).toBe(true);
        expect(await store.plannedRuns.dispatch(one, T0.getTime() + 5002)).toBe(false);
        expect(await store.runs.get(one.id)).toMatchObject({ status: "queued", nextAttemptAt: iso(5001) });
        expect(await store.plannedRuns.get(one.id)).toMatchObject({ status: "done", finishedAt: T0.getTime() + 5001, claimToken: null });
        // The runs row is now the queue's: queued, due now, claimed and executed like any run.
        expect((await store.runs.list({ status: "queued" })).runs.map((r) => r.id)).toContain(one.id);
        expect(await store.plannedRuns.skip(two, T0.getTime() + 5001, "stale")).toBe(true);
        expect(await store.runs.get(two.id)).toMatchObject({ status: "skipped", reason: "stale" });
        // Defer and retry bring a run back pending (defer not counting the attempt).
        const [three] = await store.plannedRuns.claimDue(T0.getTime() + 60_000, { ...LEASE, limit: 10, token: "t2" });
        expect(await store.plannedRuns.defer(three!, T0.getTime() + 60_000, T0.getTime() + 120_000)).toBe(true);
        expect(await store.plannedRuns.get(three!.id)).toMatchObject({ status: "pending", attempts: 0, dueAt: T0.getTime() + 120_000 });
        expect(await store.runs.get(three!.id)).toMatchObject({ status: "planned", dueAt: iso(120_000) });
        const [again] = await store.plannedRuns.claimDue(T0.getTime() + 120_000, { ...LEASE, limit: 10, token: "t3" });
        expect(await store.plannedRuns.retry(again!, T0.getTime() + 120_000, T0.getTime() + 180_000, "boom")).toBe(true);
        expect(await store.plannedRuns.get(again!.id)).toMatchObject({ status: "pending", attempts: 1, lastError: "boom" });
        // A holder that died: its lease runs out and the run is claimed again with a new token.
        const [held] = await store.plannedRuns.claimDue(T0.getTime() + 180_000, { ...LEASE, limit: 10, token: "t4" });
        expect(await store.plannedRuns.claimDue(T0.getTime() + 200_000, { ...LEASE, limit: 10, token: "t5" })).toEqual([]);
        const [taken] = await store.plannedRuns.claimDue(T0.getTime() + 240_000, { ...LEASE, limit: 10, token: "t6" });
        expect(taken).toMatchObject({ id: held!.id, claimToken: "t6", attempts: 3 });
        expect(await store.plannedRuns.dispatch(held!, T0.getTime() + 240_001)).toBe(false);
        // Its lease runs out on the last allowed attempt: failed, on both rows, never claimed again.
        expect(await store.plannedRuns.claimDue(T0.getTime() + 400_000, { ...LEASE, limit: 10, token: "t7" })).toEqual([]);
        expect(await store.runs.get(held!.id)).toMatchObject({ status: "failed", error: "the lease ran out on every attempt" });
      });

      test("two sweeps on two connections claim disjoint runs; countRecent counts done and live claims ahead; purgeFinished", async () => {
        const store = await fresh();
        await addApplet(store, "a");
        for (let i = 0; i < 12; i++) await ingestPlanned(store, { subject: `b${i}`, version: 1, dueMs: 1000 + i, contact: "c1" });
        const peer = await peerOf(store);
        const both = await Promise.all([
          store.plannedRuns.claimDue(T0.getTime() + 5000, { ...LEASE, limit: 5, token: "s1" }),
          peer.plannedRuns.claimDue(T0.getTime() + 5000, { ...LEASE, limit: 5, token: "s2" }),
        ]);
        const ids = both.flat().map((r) => r.id);
        expect(ids).toHaveLength(10);
        expect(new Set(ids).size).toBe(10);
        const first = both.flat().sort((x, y) => x.dueAt - y.dueAt)[0]!;
        await store.plannedRuns.dispatch(first, T0.getTime() + 5000);
        const q = { ruleId: "a", contactId: "c1", since: T0.getTime() };
        expect(await store.plannedRuns.countRecent(q)).toBe(1);
        const last = both.flat().sort((x, y) => y.dueAt - x.dueAt)[0]!;
        // Eight others are held now and sort before the last one.
        expect(await store.plannedRuns.countRecent({ ...q, inFlightBefore: { dueAt: last.dueAt, id: last.id, now: T0.getTime() + 5000 } })).toBe(1 + 8);
        expect(await store.plannedRuns.purgeFinished(T0.getTime() + 6000)).toBe(1);
        expect(await store.plannedRuns.get(first.id)).toBeNull();
      });
    });

    // ---------------------------------------------------------------- unit of work

    describe("unit of work", () => {
      test("what a transaction writes commits together; a throw rolls all of it back and rethrows", async () => {
        const store = await fresh();
        await addApplet(store, "a");
        const kept = await store.transaction(async (tx) => {
          const r = await tx.runs.ingest(input("a", { dedupeKey: "kept" }));
          await tx.triggerState.setNextRunAt("a", iso(1000), iso());
          return r;
        });
        expect(await store.runs.get(kept!.runId)).not.toBeNull();
        await expect(
          store.transaction(async (tx) => {
            await tx.runs.ingest(input("a", { dedupeKey: "rolled-back" }));
            await tx.triggerState.setNextRunAt("a", iso(9000), iso());
            throw new Error("boom");
          }),
        ).rejects.toThrow("boom");
        expect(await store.runs.ingest(input("a", { dedupeKey: "rolled-back" }))).not.toBeNull();
        expect((await store.triggerState.get("a"))!.nextRunAt).toBe(iso(1000));
      });

      test("calls outside a transaction wait for it: they neither join it nor see its writes before it commits", async () => {
        const store = await fresh();
        await addApplet(store, "a");
        let release!: () => void;
        const gate = new Promise<void>((r) => (release = r));
        let inside: string | undefined;
        const tx = store.transaction(async (t) => {
          inside = (await t.runs.ingest(input("a", { dedupeKey: "tx" })))!.runId;
          await gate;
          throw new Error("rolled back");
        });
        // Started while the transaction is open; it must not become part of it.
        const outside = store.runs.ingest(input("a", { dedupeKey: "outside" }));
        await new Promise((r) => setTimeout(r, 20));
        release();
        await expect(tx).rejects.toThrow("rolled back");
        expect(await outside).not.toBeNull();
        expect(await store.runs.get(inside!)).toBeNull();
      });

      test("two units of work never interleave", async () => {
        const store = await fresh();
        await addApplet(store, "a");
        const order: string[] = [];
        const one = store.transaction(async (tx) => {
          order.push("one:start");
          await tx.triggerState.setNextRunAt("a", iso(1), iso());
          await new Promise((r) => setTimeout(r, 10));
          order.push("one:end");
        });
        const two = store.transaction(async (tx) => {
          order.push("two:start");
          await tx.triggerState.setNextRunAt("a", iso(2), iso());
          order.push("two:end");
        });
        await Promise.all([one, two]);
        expect(order).toEqual(["one:start", "one:end", "two:start", "two:end"]);
        expect((await store.triggerState.get("a"))!.nextRunAt).toBe(iso(2));
      });
    });

    // ---------------------------------------------------------------- trigger state

    describe("trigger state", () => {
      test("save and get round-trip every field; setNextRunAt touches only next_run_at", async () => {
        const store = await fresh();
        await addApplet(store, "a", { triggerType: "rss" });
        expect(await store.triggerState.get("a")).toBeNull();
        const state = { ...emptyTriggerState(), nextRunAt: iso(60_000), lastPolledAt: iso(), seenKeys: ["k1", "k2"], lastValue: { price: 3 }, etag: '"e1"', lastModified: "Sat, 07 Mar 2026 12:00:00 GMT", lastError: "x", errorCount: 2 };
        await store.triggerState.save("a", state, iso());
        expect(await store.triggerState.get("a")).toEqual(state);
        await store.triggerState.setNextRunAt("a", null, iso(1));
        expect(await store.triggerState.get("a")).toEqual({ ...state, nextRunAt: null });
      });

      test("claimSlot and claimDue: exactly one of two racing claims wins; pending slots until savePolled", async () => {
        const store = await fresh();
        await addApplet(store, "a", { triggerType: "schedule" });
        await store.triggerState.setNextRunAt("a", iso(0), iso());
        const peer = await peerOf(store);
        const wins = await Promise.all([store.triggerState.claimDue("a", iso(0), iso(300_000), iso()), peer.triggerState.claimDue("a", iso(0), iso(300_000), iso())]);
        expect(wins.filter(Boolean)).toHaveLength(1);
        expect(await store.triggerState.listPending()).toEqual([{ applet_id: "a", trigger_type: "schedule", pending_slot: iso(0) }]);
        expect(await store.triggerState.savePolled("a", { ...emptyTriggerState(), lastPolledAt: iso(1) }, iso(1), iso(0))).toBe(true);
        expect(await store.triggerState.listPending()).toEqual([]);
        expect((await store.triggerState.get("a"))!.nextRunAt).toBe(iso(300_000));
        expect(await store.triggerState.claimSlot("a", iso(0), iso(1), iso())).toBe(false);
        expect(await store.triggerState.claimSlot("a", iso(300_000), iso(600_000), iso())).toBe(true);
        await store.triggerState.setNextRunAt("a", null, iso());
        expect(await store.triggerState.claimSlot("a", null, iso(5), iso())).toBe(true);
      });

      test("clearPending only clears the slot it names; setLastError", async () => {
        const store = await fresh();
        await addApplet(store, "a", { triggerType: "schedule" });
        await store.triggerState.setNextRunAt("a", iso(0), iso());
        await store.triggerState.claimDue("a", iso(0), iso(300_000), iso());
        await store.triggerState.clearPending("a", iso(1));
        expect(await store.triggerState.listPending()).toHaveLength(1);
        await store.triggerState.clearPending("a", iso(0));
        expect(await store.triggerState.listPending()).toEqual([]);
        await store.triggerState.setLastError("a", "scheduler: broken", iso(2));
        expect((await store.triggerState.get("a"))!.lastError).toBe("scheduler: broken");
      });

      test("lastErrors lists the applets whose state holds a last_error, by applet id", async () => {
        const store = await fresh();
        expect(await store.triggerState.lastErrors()).toEqual([]);
        await addApplet(store, "z", { triggerType: "rss" });
        await addApplet(store, "m", { triggerType: "rss" });
        await addApplet(store, "fine", { triggerType: "rss" });
        await store.triggerState.save("z", { ...emptyTriggerState(), lastError: "rss: 404 Not Found", errorCount: 1 }, iso());
        await store.triggerState.setNextRunAt("m", iso(5), iso());
        await store.triggerState.setLastError("m", "poll: timed out", iso(1));
        await store.triggerState.save("fine", { ...emptyTriggerState(), lastPolledAt: iso() }, iso());
        expect(await store.triggerState.lastErrors()).toEqual([
          { appletId: "m", lastError: "poll: timed out" },
          { appletId: "z", lastError: "rss: 404 Not Found" },
        ]);
        await store.triggerState.save("z", { ...emptyTriggerState(), lastError: null }, iso(2));
        expect(await store.triggerState.lastErrors()).toEqual([{ appletId: "m", lastError: "poll: timed out" }]);
      });

      test("overview lists every polled applet's last error, error count and next check, by applet id", async () => {
        const store = await fresh();
        expect(await store.triggerState.overview()).toEqual([]);
        await addApplet(store, "z", { triggerType: "rss" });
        await addApplet(store, "m", { triggerType: "schedule" });
        await addApplet(store, "hook");
        await store.triggerState.save("z", { ...emptyTriggerState(), lastError: "rss: not a feed", errorCount: 3, lastPolledAt: iso(1) }, iso(1));
        await store.triggerState.setNextRunAt("m", iso(60_000), iso());
        expect(await store.triggerState.overview()).toEqual([
          { appletId: "m", lastError: null, errorCount: 0, nextRunAt: iso(60_000), lastPolledAt: null },
          { appletId: "z", lastError: "rss: not a feed", errorCount: 3, nextRunAt: null, lastPolledAt: iso(1) },
        ]);
      });

      test("listScheduled orders by next_run_at, filters due, types, enabled and limit; listUnscheduled", async () => {
        const store = await fresh();
        await addApplet(store, "late", { triggerType: "schedule" });
        await addApplet(store, "early", { triggerType: "rss" });
        await addApplet(store, "off", { triggerType: "schedule", enabled: false });
        await addApplet(store, "hook");
        await addApplet(store, "never", { triggerType: "poll" });
        await store.triggerState.setNextRunAt("late", iso(2000), iso());
        await store.triggerState.setNextRunAt("early", iso(1000), iso());
        await store.triggerState.setNextRunAt("off", iso(500), iso());
        await store.triggerState.setNextRunAt("hook", iso(100), iso());
        await store.triggerState.setNextRunAt("never", null, iso());
        const types = ["schedule", "rss", "poll"];
        expect((await store.triggerState.listScheduled({ types })).map((r) => r.applet_id)).toEqual(["off", "early", "late"]);
        expect((await store.triggerState.listScheduled({ types, enabledOnly: true, dueAt: iso(1500) })).map((r) => r.applet_id)).toEqual(["early"]);
        expect((await store.triggerState.listScheduled({ types, limit: 1 })).map((r) => r.applet_id)).toEqual(["off"]);
        const off = (await store.triggerState.listScheduled({ types: ["schedule"] }))[0]!;
        expect(off).toMatchObject({ applet_id: "off", trigger_type: "schedule", enabled: false, next_run_at: iso(500), error_count: 0 });
        expect(await store.triggerState.listScheduled({ types: [] })).toEqual([]);
        expect((await store.triggerState.listUnscheduled(types)).map((r) => r.applet_id)).toEqual(["never"]);
      });
    });

    // ---------------------------------------------------------------- secrets, users, locks, workers

    describe("secrets", () => {
      test("put upserts by name keeping created_at; list has no values; allEncrypted; delete", async () => {
        const store = await fresh();
        await store.secrets.put("id1", "B_KEY", "cipher-b", iso(1));
        await store.secrets.put("id2", "A_KEY", "cipher-a", iso(2));
        await store.secrets.put("id3", "B_KEY", "cipher-b2", iso(3));
        expect(await store.secrets.list()).toEqual([
          { name: "A_KEY", createdAt: iso(2), updatedAt: iso(2) },
          { name: "B_KEY", createdAt: iso(1), updatedAt: iso(3) },
        ]);
        expect(await store.secrets.getEncrypted("B_KEY")).toBe("cipher-b2");
        expect(await store.secrets.getEncrypted("NONE")).toBeNull();
        expect((await store.secrets.allEncrypted()).sort((a, b) => a.name.localeCompare(b.name))).toEqual([
          { name: "A_KEY", valueEncrypted: "cipher-a" },
          { name: "B_KEY", valueEncrypted: "cipher-b2" },
        ]);
        expect(await store.secrets.delete("A_KEY")).toBe(true);
        expect(await store.secrets.delete("A_KEY")).toBe(false);
      });
    });

    describe("API tokens", () => {
      test("insert, byHash, list oldest first (with the expiry), nameTaken, touch, delete; a hash is unique", async () => {
        const store = await fresh();
        await store.apiTokens.insert({ id: "t1", name: "cli", hash: "h1", prefix: "wt_aaaaaa", readOnly: false, expiresAt: null, now: iso(1) });
        await store.apiTokens.insert({ id: "t2", name: "dashboard", hash: "h2", prefix: "wt_bbbbbb", readOnly: true, expiresAt: iso(9), now: iso(2) });
        await expect(store.apiTokens.insert({ id: "t3", name: "again", hash: "h1", prefix: "wt_cccccc", readOnly: false, expiresAt: null, now: iso(3) })).rejects.toThrow();
        expect(await store.apiTokens.list()).toEqual([
          { id: "t1", name: "cli", prefix: "wt_aaaaaa", readOnly: false, lastUsedAt: null, expiresAt: null, createdAt: iso(1) },
          { id: "t2", name: "dashboard", prefix: "wt_bbbbbb", readOnly: true, lastUsedAt: null, expiresAt: iso(9), createdAt: iso(2) },
        ]);
        expect((await store.apiTokens.byHash("h2"))?.expiresAt).toBe(iso(9));
        expect((await store.apiTokens.byHash("h2"))?.id).toBe("t2");
        expect(await store.apiTokens.byHash("nope")).toBeNull();
        expect(await store.apiTokens.nameTaken("cli")).toBe(true);
        expect(await store.apiTokens.nameTaken("other")).toBe(false);
        await store.apiTokens.touch("t1", iso(5));
        expect((await store.apiTokens.byHash("h1"))?.lastUsedAt).toBe(iso(5));
        expect(await store.apiTokens.delete("t1")).toBe(true);
        expect(await store.apiTokens.delete("t1")).toBe(false);
        expect(await store.apiTokens.byHash("h1")).toBeNull();
      });
    });

    describe("event files (attachments in the database)", () => {
      const pdf = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
      const big = Buffer.alloc(5 * 1024 * 1024, 0xab);

      test("save, get byte for byte (every byte value, 5 MB), from another connection; unknown names and events are null", async () => {
        const store = await fresh();
        const peer = await peerOf(store);
        await store.eventFiles.save("e1", [{ filename: "INV-1.pdf", contentType: "application/pdf", content: pdf }, { filename: "scan ü.png", contentType: "image/png", content: big }], iso(1));
        expect(await peer.eventFiles.get("e1", "INV-1.pdf")).toEqual({ contentType: "application/pdf", size: 256, content: pdf });
        const scan = (await peer.eventFiles.get("e1", "scan ü.png"))!;
        expect(scan.size).toBe(big.length);
        expect(scan.content.equals(big)).toBe(true);
        expect(await store.eventFiles.get("e1", "nope.pdf")).toBeNull();
        expect(await store.eventFiles.get("e2", "INV-1.pdf")).toBeNull();
      });

      test("an event's files are saved all or none: a name twice stores nothing", async () => {
        const store = await fresh();
        await expect(store.eventFiles.save("e1", [{ filename: "a.txt", contentType: "text/plain", content: Buffer.from("a") }, { filename: "a.txt", contentType: "text/plain", content: Buffer.from("b") }], iso(1))).rejects.toThrow();
        expect(await store.eventFiles.get("e1", "a.txt")).toBeNull();
        await store.eventFiles.save("e1", [], iso(1));
        expect(await store.eventFiles.get("e1", "a.txt")).toBeNull();
      });

      test("copy gives another event its own files; deleteForEvents removes only the named events' files", async () => {
        const store = await fresh();
        await store.eventFiles.save("e1", [{ filename: "INV-1.pdf", contentType: "application/pdf", content: pdf }, { filename: "b.txt", contentType: "text/plain", content: Buffer.from("b") }], iso(1));
        expect(await store.eventFiles.copy("e1", "e2", iso(2))).toBe(2);
        expect(await store.eventFiles.copy("missing", "e3", iso(2))).toBe(0);
        expect(await store.eventFiles.deleteForEvents(["e1", "e9"])).toBe(2);
        expect(await store.eventFiles.get("e1", "INV-1.pdf")).toBeNull();
        expect(await store.eventFiles.get("e2", "INV-1.pdf")).toEqual({ contentType: "application/pdf", size: 256, content: pdf });
        expect(await store.eventFiles.deleteForEvents([])).toBe(0);
        expect(await store.eventFiles.deleteForEvents(["e2"])).toBe(2);
        expect(await store.eventFiles.get("e2", "b.txt")).toBeNull();
      });
    });

    describe("users and sessions", () => {
      test("insertIfNone creates one admin even when two race on two connections; lookups; session versions", async () => {
        const store = await fresh();
        const peer = await peerOf(store);
        const u = (id: string, email: string) => ({ id, email, passwordHash: "$argon2id$x", now: iso() });
        const created = await Promise.all([store.users.insertIfNone(u("u1", "a@example.com")), peer.users.insertIfNone(u("u2", "b@example.com"))]);
        expect(created.filter(Boolean)).toHaveLength(1);
        expect(await store.users.count()).toBe(1);
        const admin = (await store.users.first())!;
        expect(admin).toMatchObject({ sessionVersion: 1, passwordHash: "$argon2id$x", createdAt: iso() });
        expect(await store.users.byEmail(admin.email)).toEqual(admin);
        expect(await store.users.byId(admin.id)).toEqual(admin);
        expect(await store.users.byEmail("nobody@example.com")).toBeNull();
        expect(await store.users.bumpSessionVersion(admin.id, iso(1))).toBe(2);
        expect(await store.users.setPassword(admin.id, "$argon2id$new", iso(2))).toBe(3);
        expect(await store.users.byId(admin.id)).toMatchObject({ passwordHash: "$argon2id$new", sessionVersion: 3, updatedAt: iso(2) });
        expect(await store.users.bumpSessionVersion("missing", iso())).toBeNull();
        await expect(store.users.insert(u("u3", admin.email))).rejects.toThrow();
      });
    });

    describe("job locks", () => {
      test("every named job has its row; take is exclusive until expiry; renew and release only for the holder", async () => {
        const store = await fresh();
        for (const n of ["scheduler_tick", "retention", "worker_heartbeat", "alerts", QUEUE_VACUUM_LOCK]) expect(await store.jobLocks.get(n)).toMatchObject({ name: n, lockedBy: null });
        const peer = await peerOf(store);
        const taken = await Promise.all([store.jobLocks.take("retention", "a", at(0), 60_000), peer.jobLocks.take("retention", "b", at(0), 60_000)]);
        expect(taken.filter(Boolean)).toHaveLength(1);
        const holder = taken[0] ? "a" : "b";
        const other = holder === "a" ? "b" : "a";
        expect(await store.jobLocks.take("retention", other, at(60_000), 60_000)).toBe(false);
        expect(await store.jobLocks.renew("retention", other, at(1), 60_000)).toBe(false);
        expect(await store.jobLocks.renew("retention", holder, at(1), 60_000)).toBe(true);
        expect(await store.jobLocks.get("retention")).toMatchObject({ lockedBy: holder, expiresAt: iso(60_001) });
        expect(await store.jobLocks.take("retention", other, at(60_002), 60_000)).toBe(true);
        expect(await store.jobLocks.release("retention", holder, at(60_003))).toBe(false);
        expect(await store.jobLocks.release("retention", other, at(60_004))).toBe(true);
        expect(await store.jobLocks.get("retention")).toEqual({ name: "retention", lockedBy: null, lockedAt: null, expiresAt: null, lastRunAt: iso(60_004) });
        await store.jobLocks.heartbeat("scheduler_tick", at(5));
        expect((await store.jobLocks.get("scheduler_tick"))!.lastRunAt).toBe(iso(5));
      });

      test("a lock of a name never taken before (one per listening applet) gets its row on the first take, for exactly one of two takers", async () => {
        const store = await fresh();
        const peer = await peerOf(store);
        expect(await store.jobLocks.get("listen:a1")).toBeNull();
        const taken = await Promise.all([store.jobLocks.take("listen:a1", "a", at(0), 30_000), peer.jobLocks.take("listen:a1", "b", at(0), 30_000)]);
        expect(taken.filter(Boolean)).toHaveLength(1);
        const holder = taken[0] ? "a" : "b";
        expect(await store.jobLocks.get("listen:a1")).toMatchObject({ lockedBy: holder, expiresAt: iso(30_000) });
        expect(await store.jobLocks.take("listen:a1", "c", at(29_999), 30_000)).toBe(false);
        expect(await store.jobLocks.take("listen:a1", "c", at(30_001), 30_000)).toBe(true);
      });
    });

    describe("workers", () => {
      test("heartbeat registers and renews a lease and stamps worker_heartbeat; live, remove, prune", async () => {
        const store = await fresh();
        await store.workers.heartbeat({ id: "w1", hostname: "h", pid: 10, now: at(0), leaseMs: 30_000, fault: null });
        await store.workers.heartbeat({ id: "w2", hostname: "h", pid: 11, now: at(1), leaseMs: 30_000, fault: "disk full" });
        expect((await store.jobLocks.get("worker_heartbeat"))!.lastRunAt).toBe(iso(1));
        expect(await store.workers.live(at(10))).toEqual([
          { id: "w1", hostname: "h", pid: 10, seenAt: iso(0), leaseUntil: iso(30_000), fault: null, smtpPort: null, metrics: null, processScope: null, sessionLock: null, createdAt: iso(0) },
          { id: "w2", hostname: "h", pid: 11, seenAt: iso(1), leaseUntil: iso(30_001), fault: "disk full", smtpPort: null, metrics: null, processScope: null, sessionLock: null, createdAt: iso(1) },
        ]);
        await store.workers.heartbeat({ id: "w1", hostname: "h", pid: 10, now: at(20_000), leaseMs: 30_000, fault: null });
        expect((await store.workers.live(at(30_500))).map((w) => w.id)).toEqual(["w1"]);
        // A row that a running run still names stays through prune.
        await addApplet(store, "a");
        await store.runs.ingest(input("a"));
        await store.runs.claim("w2", at(2));
        expect(await store.workers.prune(at(100_000))).toBe(1);
        expect(await store.workers.remove("w2")).toBe(true);
        expect(await store.workers.remove("w2")).toBe(false);
      });

      test("a heartbeat stores the worker's SMTP port and metrics snapshot, and the next one replaces them", async () => {
        const store = await fresh();
        await store.workers.heartbeat({ id: "w1", hostname: "h", pid: 10, now: at(0), leaseMs: 30_000, fault: null, smtpPort: 2525, metrics: '[{"name":"x"}]' });
        expect(await store.workers.live(at(1))).toEqual([expect.objectContaining({ id: "w1", smtpPort: 2525, metrics: '[{"name":"x"}]' })]);
        await store.workers.heartbeat({ id: "w1", hostname: "h", pid: 10, now: at(10), leaseMs: 30_000, fault: null, smtpPort: null, metrics: "[]" });
        expect(await store.workers.live(at(11))).toEqual([expect.objectContaining({ id: "w1", smtpPort: null, metrics: "[]" })]);
      });
    });

    // ---------------------------------------------------------------- waits
    describe("waits", () => {
      const wait = (o: Partial<WaitInsert> = {}): WaitInsert => ({ seq: 0, stepId: "w", kind: "for_call", resumeAt: null, resumeAs: null, timeoutAt: null, detail: { timezone: "UTC" }, summary: "waiting for a call", ...o });
      const parked = async (store: Store, w: WaitInsert = wait()) => {
        await addApplet(store, "a");
        await store.runs.ingest(input("a"));
        const run = (await store.runs.claim("w1", at(1)))!;
        expect(await store.waits.suspend(run, [], w, at(2))).toBe("waiting");
        return run;
      };

      test("suspend parks a claimed run (fenced by its token) with nothing held; a resolve queues it once", async () => {
        const store = await fresh();
        const run = await parked(store);
        expect(await store.runs.get(run.id)).toMatchObject({ status: "waiting", lockedBy: null, error: "waiting for a call" });
        expect(await store.waits.suspend(run, [], wait(), at(3))).toBe("lost");
        expect(await store.runs.claim("w1", at(10))).toBeNull();
        const first = await store.waits.resolve({ runId: run.id, seq: 0, resolution: "called", by: "10.0.0.1", output: { ok: 1 }, now: at(20) });
        const second = await store.waits.resolve({ runId: run.id, seq: 0, resolution: "called", by: "10.0.0.2", output: { ok: 2 }, now: at(21) });
        expect(first).toEqual({ resolved: true });
        expect(second).toMatchObject({ resolved: false, wait: { resolution: "called", resolvedBy: "10.0.0.1", output: { ok: 1 }, runStatus: "queued" } });
        expect(await store.runs.get(run.id)).toMatchObject({ status: "queued", error: null, nextAttemptAt: iso(20) });
        expect((await store.runs.claim("w1", at(30)))!.id).toBe(run.id);
      });

      test("resumeDue resolves due waits as their resume_as, once, and only those due; listWaiting and countWaiting see the waiting ones", async () => {
        const store = await fresh();
        const run = await parked(store, wait({ kind: "for_approval", resumeAt: at(1000), resumeAs: "timeout", timeoutAt: at(1000) }));
        expect(await store.waits.listWaiting({ limit: 10 })).toEqual([expect.objectContaining({ runId: run.id, kind: "for_approval", resumeAt: iso(1000), runStatus: "waiting" })]);
        expect(await store.waits.listWaiting({ appletId: "b", limit: 10 })).toEqual([]);
        expect(await store.waits.countWaiting()).toEqual({ for_approval: 1 });
        expect(await store.waits.resumeDue(at(999), 10)).toBe(0);
        const peer = await peerOf(store);
        const both = await Promise.all([store.waits.resumeDue(at(1000), 10), peer.waits.resumeDue(at(1000), 10)]);
        expect(both[0] + both[1]).toBe(1);
        expect(await store.waits.get(run.id, 0)).toMatchObject({ resolution: "timeout", resolvedBy: "clock", runStatus: "queued" });
        expect(await store.waits.countWaiting()).toEqual({});
      });

      test("a call that came before the run parked is kept: the run is queued again at once when it reaches the wait", async () => {
        const store = await fresh();
        await addApplet(store, "a");
        await store.runs.ingest(input("a"));
        const run = (await store.runs.claim("w1", at(1)))!;
        expect(await store.waits.resolve({ runId: run.id, seq: 0, resolution: "called", by: "x", output: "early", now: at(2), early: { appletId: "a", kind: "for_call" } })).toEqual({ resolved: true });
        expect(await store.waits.suspend(run, [], wait(), at(3))).toBe("queued");
        expect(await store.runs.get(run.id)).toMatchObject({ status: "queued" });
        expect(await store.waits.get(run.id, 0)).toMatchObject({ resolution: "called", output: "early" });
      });

      test("a run that holds its lane while it waits (strict order): no later run of the lane is claimed, other lanes and applets go on; resumed, it is claimed before them", async () => {
        const store = await fresh();
        await addApplet(store, "a");
        await addApplet(store, "b");
        await store.runs.ingest(input("a", { receivedAt: iso(0) }));
        const held = (await store.runs.claim("w1", at(1)))!;
        expect(await store.waits.suspend(held, [], wait({ holdsLane: true }), at(2))).toBe("waiting");
        const later = (await store.runs.ingest(input("a", { receivedAt: iso(3) })))!;
        const other = (await store.runs.ingest(input("a", { receivedAt: iso(4), controls: { lane: "k:other" } })))!;
        const elsewhere = (await store.runs.ingest(input("b", { receivedAt: iso(5) })))!;
        const claimed = [(await store.runs.claim("w1", at(10)))!, (await store.runs.claim("w1", at(10)))!];
        expect(claimed.map((r) => r.id).sort()).toEqual([other.runId, elsewhere.runId].sort());
        expect(await store.runs.claim("w1", at(10))).toBeNull();
        // Resumed long after the later run was queued: it is its lane's head all the same.
        expect(await store.waits.resolve({ runId: held.id, seq: 0, resolution: "called", by: "x", output: null, now: at(1000) })).toEqual({ resolved: true });
        expect(await store.runs.get(held.id)).toMatchObject({ status: "queued" });
        const again = (await store.runs.claim("w1", at(1001)))!;
        expect(again.id).toBe(held.id);
        expect(await store.runs.claim("w1", at(1001))).toBeNull();
        expect(await store.runs.finish(again, "succeeded", [], null, at(1002))).toBe(true);
        expect((await store.runs.claim("w1", at(1003)))!.id).toBe(later.runId);
      });

      test("a run that does not hold its lane while it waits lets the lane's next run go", async () => {
        const store = await fresh();
        const run = await parked(store);
        const later = (await store.runs.ingest(input("a", { receivedAt: iso(3) })))!;
        expect((await store.runs.claim("w1", at(10)))!.id).toBe(later.runId);
        expect(run.id).not.toBe(later.runId);
      });

      test("a call that comes while the run parks (its park not yet committed) is taken: the run is queued again when the park commits", async () => {
        const store = await fresh();
        await addApplet(store, "a");
        await store.runs.ingest(input("a"));
        const run = (await store.runs.claim("w1", at(1)))!;
        let call: Promise<unknown> = Promise.resolve();
        await store.transaction(async (tx) => {
          expect(await tx.waits.suspend(run, [], wait(), at(2))).toBe("waiting");
          // The link's request found no wait yet and the run running: it comes as an early call.
          call = store.waits.resolve({ runId: run.id, seq: 0, resolution: "called", by: "x", output: "meanwhile", now: at(3), early: { appletId: "a", kind: "for_call" } });
          await new Promise((r) => setTimeout(r, 300));
        });
        expect(await call).toEqual({ resolved: true });
        expect(await store.waits.get(run.id, 0)).toMatchObject({ resolution: "called", output: "meanwhile", runStatus: "queued" });
        expect(await store.runs.get(run.id)).toMatchObject({ status: "queued" });
      });

      test("cancel ends a waiting run and its wait; a resolve after it changes nothing", async () => {
        const store = await fresh();
        const run = await parked(store);
        expect(await store.waits.cancel(run.id, "admin", "cancelled by admin", at(5))).toBe(true);
        expect(await store.waits.cancel(run.id, "admin", "again", at(6))).toBe(false);
        expect(await store.runs.get(run.id)).toMatchObject({ status: "cancelled", error: "cancelled by admin", finishedAt: iso(5) });
        expect(await store.waits.resolve({ runId: run.id, seq: 0, resolution: "called", by: "x", output: null, now: at(7) })).toMatchObject({ resolved: false, wait: { resolution: "cancelled" } });
        expect(await store.waits.pendingOf(run.id)).toBeNull();
      });
    });
  });
}
