import pg from "pg";
import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { alertPolicy } from "@/lib/alerts/policy";
import { openPostgresStore, type PostgresStore } from "@/lib/db/store/postgres";
import { migratePostgres } from "@/lib/db/store/postgres/migrate";
import * as Q from "@/lib/db/store/postgres/queue-sql";
import type { ClaimedRun, IngestInput } from "@/lib/db/store/types";
import type { Step } from "@/lib/executor/types";
import { TEST_POSTGRES_URL, createTestPostgresStore, createTestSchema, noPostgres } from "../helpers/postgres";

/**
 * The PostgreSQL store's own guarantees, beyond the shared contract: migrations under an advisory
 * lock, the queue's rules with several stores (several processes' pools) claiming at once,
 * NOTIFY wake-ups, and the key check. Real PostgreSQL (TEST_POSTGRES_URL), a schema per test.
 */
const T0 = new Date("2026-03-07T12:00:00.000Z");
const at = (ms: number) => new Date(T0.getTime() + ms);

async function addApplet(store: PostgresStore, id: string) {
  await store.applets.insert({ id, name: id, enabled: true, triggerType: "webhook", definition: { version: 1 }, webhookToken: `tok-${id}`, now: T0.toISOString() });
}
const hook = (appletId: string, ms: number, extra: Partial<IngestInput> = {}): IngestInput => ({
  appletId,
  source: "webhook",
  dedupeKey: null,
  payloadJson: JSON.stringify({ n: ms }),
  receivedAt: at(ms).toISOString(),
  maxAttempts: 5,
  ...extra,
});

/** Time for a LISTEN session to open, or for the notifications of a commit to arrive. */
const settle = () => new Promise((r) => setTimeout(r, 300));
/** `sql` with its $n parameters written in as the SQL literals `params`, for EXPLAIN. */
const literally = (sql: string, params: readonly string[]) => sql.replace(/\$(\d)/g, (_, d: string) => params[Number(d) - 1]!);
/** A plan as text. */
const planOf = async (c: pg.PoolClient, sql: string) => (await c.query<{ "QUERY PLAN": string }>(`EXPLAIN ${sql}`)).rows.map((r) => r["QUERY PLAN"]).join("\n");
/** A history of `count` finished runs ('x1'…, events 'h1'…) spread over applets a0…a{applets - 1}, received at T0. */
async function finishedHistory(c: pg.PoolClient, count: number, applets: number) {
  await c.query(`INSERT INTO events (id, applet_id, source, payload, received_at, created_at, updated_at)
    SELECT 'h' || g, 'a' || (g % $2), 'webhook', '{}', $1, $1, $1 FROM generate_series(1, $3) g`, [T0.toISOString(), applets, count]);
  await c.query(`INSERT INTO runs (id, applet_id, event_id, status, steps, finished_at, created_at, updated_at)
    SELECT 'x' || substr(id, 2), applet_id, id, 'succeeded', '[]', received_at, received_at, received_at FROM events`);
}

/** 5,000 queued runs ('r1'…, events 'e1'…) over applets a0…a4, received 1 ms apart from T0 + 3 ms; none for the event `except`. */
async function queuedBacklog(c: pg.PoolClient, except = "") {
  await c.query(`INSERT INTO events (id, applet_id, source, payload, received_at, created_at, updated_at)
    SELECT 'e' || g, 'a' || (g % 5), 'webhook', '{}', t, t, t
    FROM generate_series(1, 5000) g, LATERAL (SELECT to_char(($1::timestamptz + g * interval '1 ms') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS t) ts`, [at(3).toISOString()]);
  await c.query(`INSERT INTO runs (id, applet_id, event_id, status, next_attempt_at, steps, created_at, updated_at)
    SELECT 'r' || substr(id, 2), applet_id, id, 'queued', received_at, '[]', received_at, received_at FROM events WHERE id LIKE 'e%' AND id <> $1`, [except]);
}

/**
 * Records the statements the store's pool runs (their first 30 characters) and "connect (a
 * transaction)" for each client the store checks out itself, until `restore`.
 */
function recordCalls(store: PostgresStore) {
  const calls: string[] = [];
  const pool = store.pool as unknown as { query: (...a: unknown[]) => unknown; connect: (...a: unknown[]) => unknown };
  const [query, connect] = [pool.query, pool.connect];
  // pool.query checks a client out itself (synchronously): only a connect of the store's own is a transaction.
  let inQuery = false;
  pool.query = function (this: unknown, ...a: unknown[]) {
    const text = typeof a[0] === "string" ? a[0] : (a[0] as { text: string }).text;
    calls.push(text.trim().slice(0, 30));
    inQuery = true;
    try {
      return query.apply(this, a);
    } finally {
      inQuery = false;
    }
  };
  pool.connect = function (this: unknown, ...a: unknown[]) {
    if (!inQuery) calls.push("connect (a transaction)");
    return connect.apply(this, a);
  };
  return {
    calls,
    restore: () => {
      pool.query = query;
      pool.connect = connect;
    },
  };
}

describe.skipIf(noPostgres)(`PostgreSQL store${noPostgres ? ` (${noPostgres})` : ""}`, () => {
  test("ten migrators starting at once apply each migration exactly once", async () => {
    const { schema, drop } = await createTestSchema("mig");
    const clients = Array.from({ length: 10 }, () => new pg.Client({ connectionString: TEST_POSTGRES_URL, options: `-c search_path=${schema}` }));
    try {
      await Promise.all(clients.map((c) => c.connect()));
      const results = await Promise.all(
        clients.map((c) => migratePostgres({ exec: async (t) => (await c.query(t)).rows ?? [], query: async (t, p) => (await c.query(t, p)).rows }, undefined, { jobNames: ["scheduler_tick"] })),
      );
      const applied = results.flatMap((r) => r.applied).sort();
      const recorded = (await clients[0]!.query<{ tag: string }>("SELECT tag FROM _migrations ORDER BY tag")).rows.map((r) => r.tag);
      expect(recorded.length).toBeGreaterThan(1);
      expect(applied).toEqual(recorded);
      // Exactly one migrator did the work; the other nine found it done.
      expect(results.filter((r) => r.applied.length > 0)).toHaveLength(1);
      expect((await clients[0]!.query("SELECT name FROM job_locks")).rows).toEqual([{ name: "scheduler_tick" }]);
    } finally {
      await Promise.all(clients.map((c) => c.end().catch(() => undefined)));
      await drop();
    }
  });

  test("a process opening a schema no one has created yet creates it under the migration lock instead of failing with 'no schema has been selected'", async () => {
    const schema = `peer_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
    // The peer gets there first (before, only the owner created the schema, outside the migration
    // lock, so a peer that took the lock first migrated into nothing): it is ready on its own.
    const peer = openPostgresStore({ url: TEST_POSTGRES_URL, schema, poolSize: 2, alertPolicy });
    await peer.ready();
    const owner = openPostgresStore({ url: TEST_POSTGRES_URL, schema, ownSchema: true, poolSize: 2, alertPolicy });
    try {
      await owner.ready();
      await addApplet(peer, "p1");
      expect((await owner.applets.get("p1"))?.id).toBe("p1");
    } finally {
      await peer.close();
      await owner.close();
    }
  });

  describe("the queue", () => {
    let store: Awaited<ReturnType<typeof createTestPostgresStore>>;
    // A fresh schema per test: no test sees another's runs.
    beforeEach(async () => {
      store = await createTestPostgresStore();
    });
    afterEach(async () => store?.cleanup());

    test("ingest stores the event and its run; a duplicate dedupe key stores nothing; a batch with a deleted applet fails that row alone", async () => {
      await addApplet(store, "a-ingest");
      const first = await store.runs.ingest(hook("a-ingest", 0, { dedupeKey: "k1" }));
      expect(first).not.toBeNull();
      expect(await store.runs.ingest(hook("a-ingest", 1, { dedupeKey: "k1" }))).toBeNull();
      const run = await store.runs.get(first!.runId);
      expect(run).toMatchObject({ status: "queued", attempt: 1, nextAttemptAt: at(0).toISOString(), createdAt: at(0).toISOString(), steps: [] });
      expect((await store.runs.event(first!.eventId))?.payload).toEqual({ n: 0 });

      const batch = await store.runs.ingestMany([hook("a-ingest", 2), hook("gone", 3), hook("a-ingest", 4, { dedupeKey: "k2" }), hook("a-ingest", 5, { dedupeKey: "k2" })]);
      expect(batch[0]).toMatchObject({ eventId: expect.any(String) });
      expect(batch[1]).toBeInstanceOf(Error);
      expect(batch[2]).toMatchObject({ eventId: expect.any(String) });
      expect(batch[3]).toBeNull();
      const clean = await store.runs.ingestMany([hook("a-ingest", 6), hook("a-ingest", 7, { dedupeKey: "k3" }), hook("a-ingest", 8, { dedupeKey: "k3" })]);
      expect(clean.map((r) => r === null)).toEqual([false, false, true]);
    });

    test("claims go oldest due first, one running run per applet across two processes' pools, each fenced by its token", async () => {
      const other = openPostgresStore({ url: TEST_POSTGRES_URL, schema: store.schema, poolSize: 4, alertPolicy });
      try {
        for (const id of ["q1", "q2", "q3"]) await addApplet(store, id);
        // q2's first run is the oldest overall; q3's is not due yet.
        await store.runs.ingest(hook("q1", 20));
        await store.runs.ingest(hook("q2", 10));
        await store.runs.ingest(hook("q1", 30));
        await store.runs.ingest(hook("q2", 40));
        await store.runs.ingest(hook("q3", 5_000));
        const now = at(1_000);
        const first = await store.runs.claim("w1", now);
        expect(first?.appletId).toBe("q2");
        expect(first?.createdAt).toBe(at(10).toISOString());

        // Eight claims at once from two pools: only q1 is free, so exactly one wins it.
        const claims = await Promise.all(Array.from({ length: 8 }, (_, i) => (i % 2 ? other : store).runs.claim(`w${i}`, now)));
        const won = claims.filter((c) => c !== null);
        expect(won).toHaveLength(1);
        expect(won[0]?.appletId).toBe("q1");
        expect(won[0]?.createdAt).toBe(at(20).toISOString());

        // Fencing: a stale token changes nothing.
        const stale = { ...first!, claimToken: "not-the-token" };
        expect(await store.runs.finish(stale, "succeeded", [], null, now)).toBe(false);
        expect(await store.runs.saveSteps(stale, [], now)).toBe(false);
        expect(await store.runs.retryLater(stale, [], "x", now, now)).toBe(false);
        expect(await store.runs.release(stale, now)).toBe(false);

        // Finish and claim in one transaction: q2's next run is claimable again at once.
        const { ok, next } = await store.runs.finishAndClaim(first!, "succeeded", [], null, at(1_001), "w1");
        expect(ok).toBe(true);
        expect(next?.appletId).toBe("q2");
        expect(next?.createdAt).toBe(at(40).toISOString());
        expect((await store.applets.get("q2"))?.runCount).toBe(1);
        expect(await store.runs.finish(first!, "succeeded", [], null, at(1_002))).toBe(false);

        // A retry waits for its time; q3 becomes due later.
        expect(await store.runs.retryLater(next!, [], "boom", at(60_000), at(1_003))).toBe(true);
        expect(await store.runs.claim("w1", at(2_000))).toBeNull();
        expect((await store.runs.claim("w1", at(6_000)))?.appletId).toBe("q3");
        const retried = await store.runs.claim("w1", at(60_000));
        expect(retried?.attempt).toBe(2);
      } finally {
        await other.close();
      }
    });

    test("a success's finish and the next claim are one statement on the pool (one round trip, no transaction); a failure, an open alert or a lost claim take the transaction", async () => {
      for (const id of ["f1", "f2"]) await addApplet(store, id);
      for (const [id, ms] of [["f1", 10], ["f1", 20], ["f2", 30], ["f1", 40], ["f2", 50]] as const) await store.runs.ingest(hook(id, ms));
      const { calls, restore } = recordCalls(store);
      try {
        const first = (await store.runs.claim("w1", at(1_000)))!;
        expect(first.createdAt).toBe(at(10).toISOString());
        calls.length = 0;
        // Oldest due first across applets, the finishing run's own applet counted as free.
        const a = await store.runs.finishAndClaim(first, "succeeded", [], null, at(1_001), "w1");
        expect(calls).toEqual([expect.stringMatching(/^WITH RECURSIVE f AS/)]);
        expect(a).toMatchObject({ ok: true, next: { appletId: "f1", createdAt: at(20).toISOString(), status: "running", lockedBy: "w1" } });
        expect(await store.runs.get(first.id)).toMatchObject({ status: "succeeded", finishedAt: at(1_001).toISOString(), lockedBy: null });
        expect((await store.applets.get("f1"))?.runCount).toBe(1);
        // The claim the statement made is fenced by the token it returned.
        expect(await store.runs.saveSteps(a.next!, [], at(1_002))).toBe(true);

        // A failure records alert state: the transaction.
        calls.length = 0;
        const b = await store.runs.finishAndClaim(a.next!, "failed", [], "boom", at(1_003), "w1");
        expect(calls).toContain("connect (a transaction)");
        expect(b).toMatchObject({ ok: true, next: { appletId: "f2", createdAt: at(30).toISOString() } });
        expect((await store.applets.get("f1"))?.failureStreak).toBe(1);

        // A success while the applet's alert is open owes a recovery notice: the transaction too.
        // An open alert as a failure's alert leaves it (no store method opens one on its own).
        await store.pool.query("UPDATE applets SET alert_open = 1 WHERE id = 'f2'");
        calls.length = 0;
        const c = await store.runs.finishAndClaim(b.next!, "succeeded", [], null, at(1_004), "w1");
        expect(calls).toContain("connect (a transaction)");
        expect(c).toMatchObject({ ok: true, next: { appletId: "f1", createdAt: at(40).toISOString() } });

        // A lost claim changes nothing of the run and still claims the next.
        const lost = await store.runs.finishAndClaim({ ...c.next!, claimToken: "not-the-token" }, "succeeded", [], null, at(1_005), "w1");
        expect(lost.ok).toBe(false);
        expect(lost.next).toMatchObject({ appletId: "f2", createdAt: at(50).toISOString() });
        expect((await store.runs.get(c.next!.id))?.status).toBe("running");
      } finally {
        restore();
      }
    });

    test("the settles of one worker's slots that come while its statement is in flight go in one statement, with a claim for each finish that went in; a lost one is settled alone", async () => {
      for (const id of ["g1", "g2", "g3", "g4", "g5"]) await addApplet(store, id);
      for (const [id, ms] of [["g1", 10], ["g2", 20], ["g3", 30], ["g4", 40], ["g1", 50], ["g2", 60], ["g3", 70], ["g5", 80], ["g4", 90]] as const) await store.runs.ingest(hook(id, ms));
      const running = [];
      for (let i = 0; i < 4; i++) running.push((await store.runs.claim("w1", at(1_000)))!);
      expect(running.map((r) => r.appletId)).toEqual(["g1", "g2", "g3", "g4"]);
      const [r1, r2, r3, r4] = running as [ClaimedRun, ClaimedRun, ClaimedRun, ClaimedRun];
      // Text that an array literal must escape, in the steps and the error of a batched finish.
      const odd = 'a "quoted" \\ back\\slash, {braces}, NULL, ☃';
      const steps = [{ kind: "action", name: odd, index: 0, status: "succeeded", attempt: 1, warnings: [odd], logs: [], started_at: at(1_000).toISOString(), duration_ms: 1, output: { text: odd } }] as Step[];
      const { calls, restore } = recordCalls(store);
      try {
        // Four slots finish at once: the first goes alone, the other three wait for it and go together.
        const [a, b, c, d] = await Promise.all([
          store.runs.finishAndClaim(r1, "succeeded", [], null, at(1_001), "w1"),
          store.runs.finishAndClaim(r2, "succeeded", steps, null, at(1_002), "w1"),
          store.runs.finishAndClaim({ ...r3, claimToken: "not-the-token" }, "succeeded", [], null, at(1_003), "w1"),
          store.runs.finishAndClaim(r4, "skipped", null, odd, at(1_004), "w1"),
        ]);
        expect(calls.slice(0, 3)).toEqual([expect.stringMatching(/^WITH RECURSIVE f AS/), expect.stringMatching(/^WITH RECURSIVE input AS/), expect.stringMatching(/^WITH RECURSIVE f AS/)]);
        // The first freed g1 and took its next run, g1@50.
        expect(a).toMatchObject({ ok: true, next: { appletId: "g1", createdAt: at(50).toISOString() } });
        // The batch: g2's and g4's finishes went in, so g2 and g4 were free; g3 was not (its finish
        // was refused: the run is still running under its real token), nor g1 (a's claim). Two
        // finishes, two claims: the oldest due heads of free applets, g2@60 and g5@80.
        expect(b.ok).toBe(true);
        expect(d.ok).toBe(true);
        expect([b.next, d.next].map((n) => `${n?.appletId}@${n?.createdAt}`).sort()).toEqual([`g2@${at(60).toISOString()}`, `g5@${at(80).toISOString()}`]);
        // The lost one, settled alone after: nothing of its run changed, and it claimed g4@90 (free since d).
        expect(c).toMatchObject({ ok: false, next: { appletId: "g4", createdAt: at(90).toISOString() } });
        expect(await store.runs.get(r3.id)).toMatchObject({ status: "running", finishedAt: null });
        expect(await store.runs.saveSteps(r3, [], at(1_010))).toBe(true);

        // Each finish kept its own time, steps and error; each claim is fenced by its own token.
        expect(await store.runs.get(r2.id)).toMatchObject({ status: "succeeded", finishedAt: at(1_002).toISOString(), steps, error: null, lockedBy: null });
        expect(await store.runs.get(r4.id)).toMatchObject({ status: "skipped", finishedAt: at(1_004).toISOString(), steps: [], error: odd });
        const nexts = [a.next!, b.next!, c.next!, d.next!];
        expect(new Set(nexts.map((n) => n.claimToken)).size).toBe(4);
        for (const n of nexts) {
          expect(n).toMatchObject({ status: "running", lockedBy: "w1", startedAt: expect.any(String), event: { id: n.eventId }, applet: { id: n.appletId }, replay: false });
          expect(await store.runs.saveSteps(n, [], at(1_010))).toBe(true);
        }
        expect(await store.runs.saveSteps({ ...nexts[1]!, claimToken: nexts[3]!.claimToken }, [], at(1_010))).toBe(false);
        const counts = Object.fromEntries(await Promise.all(["g1", "g2", "g3", "g4", "g5"].map(async (id) => [id, (await store.applets.get(id))?.runCount])));
        expect(counts).toEqual({ g1: 1, g2: 1, g3: 0, g4: 1, g5: 0 });
        // One running run per applet: g3's old one and the four claims.
        const rows = (await store.pool.query<{ applet_id: string }>("SELECT applet_id FROM runs WHERE status = 'running' ORDER BY applet_id")).rows;
        expect(rows.map((r) => r.applet_id)).toEqual(["g1", "g2", "g3", "g4", "g5"]);
      } finally {
        restore();
      }
    });

    test("a webhook's applet row is read once per web process; a disable, an edit or a delete made by any process reaches it within a second, and its own at once", async () => {
      const other = openPostgresStore({ url: TEST_POSTGRES_URL, schema: store.schema, poolSize: 2, alertPolicy });
      try {
        await addApplet(store, "h1");
        const pool = other.pool as unknown as { query: (...a: unknown[]) => unknown };
        const query = pool.query;
        let reads = 0;
        pool.query = function (this: unknown, ...a: unknown[]) {
          if (/FROM applets WHERE id = \$1/.test(typeof a[0] === "string" ? a[0] : (a[0] as { text: string }).text)) reads++;
          return query.apply(this, a);
        };
        // The first request subscribes; once the LISTEN is in, rows are kept.
        await other.applets.forHook("h1");
        const deadline = Date.now() + 5_000;
        for (let before = reads; ; before = reads) {
          await other.applets.forHook("h1");
          if (reads === before) break;
          if (Date.now() > deadline) throw new Error("the hook cache never started keeping rows");
          await new Promise((r) => setTimeout(r, 20));
        }
        const kept = reads;
        for (let i = 0; i < 5; i++) expect((await other.applets.forHook("h1"))?.enabled).toBe(true);
        expect(reads).toBe(kept);

        const seen = async (check: (row: Awaited<ReturnType<typeof other.applets.forHook>>) => boolean) => {
          const until = Date.now() + 1_000;
          while (!check(await other.applets.forHook("h1"))) {
            if (Date.now() > until) throw new Error("the other web process did not see the change within a second");
            await new Promise((r) => setTimeout(r, 10));
          }
        };
        // Another process disables it, changes its token, deletes it.
        await store.applets.setEnabled("h1", false, at(1).toISOString());
        await seen((row) => row?.enabled === false);
        await store.applets.setWebhookToken("h1", "tok-new");
        await seen((row) => row?.webhookToken === "tok-new");
        // "Listen for test event" started through another web process.
        await store.applets.setListening("h1", at(5).toISOString());
        await seen((row) => row?.listenUntil === at(5).toISOString());
        // Counting runs on the applet announces nothing (the finish's update of run_count).
        const quiet = reads;
        // The very statement a finish runs on the applet, alone, to see that it announces nothing.
        await store.pool.query("UPDATE applets SET run_count = run_count + 1 WHERE id = 'h1'");
        await new Promise((r) => setTimeout(r, 100));
        await other.applets.forHook("h1");
        expect(reads).toBe(quiet);
        // Its own write applies to its very next request.
        await other.applets.setEnabled("h1", true, at(2).toISOString());
        expect((await other.applets.forHook("h1"))?.enabled).toBe(true);
        await store.applets.delete("h1");
        await seen((row) => row === null);
      } finally {
        await other.close();
      }
    });

    test("stale runs go back to the queue: a worker without a live lease, or a run locked past the stuck bound", async () => {
      await addApplet(store, "s1");
      await addApplet(store, "s2");
      await store.runs.ingest(hook("s1", 0));
      await store.runs.ingest(hook("s2", 1));
      await store.workers.heartbeat({ id: "alive", hostname: "h", pid: 1, now: at(100_000), leaseMs: 30_000, fault: null });
      const dead = await store.runs.claim("dead-worker", at(100_000));
      const live = await store.runs.claim("alive", at(100_000));
      expect([dead?.appletId, live?.appletId].sort()).toEqual(["s1", "s2"]);
      const recovered = await store.runs.recoverStale({ now: at(101_000), stuckBefore: at(0) });
      expect(recovered).toEqual([{ id: dead!.id, appletId: dead!.appletId, lockedBy: "dead-worker", reason: "lease" }]);
      expect(await store.runs.finish(dead!, "succeeded", [], null, at(101_000))).toBe(false);
      const stuck = await store.runs.recoverStale({ now: at(102_000), stuckBefore: at(101_500), self: "alive" });
      expect(stuck.map((r) => [r.id, r.reason])).toEqual([[live!.id, "stuck"]]);
      const again = await store.runs.get(dead!.id);
      expect(again).toMatchObject({ status: "queued", attempt: 1, nextAttemptAt: at(dead!.appletId === "s1" ? 0 : 1).toISOString() });
    });

    test("NOTIFY reaches every listening store: a queued run wakes workers, every run change wakes the live views within a second, and what changed is read with changedAfter", async () => {
      const web1 = openPostgresStore({ url: TEST_POSTGRES_URL, schema: store.schema, poolSize: 1, alertPolicy });
      const web2 = openPostgresStore({ url: TEST_POSTGRES_URL, schema: store.schema, poolSize: 1, alertPolicy });
      try {
        await Promise.all([web1.ready(), web2.ready()]);
        await addApplet(store, "n1");
        const woke: number[] = [];
        const changed = [0, 0];
        web1.notifications.onQueued(() => woke.push(Date.now()));
        web1.notifications.onRunChanged(() => changed[0]!++);
        web2.notifications.onRunChanged(() => changed[1]!++);
        // A live view is open in one of them: run changes are announced to both; a worker has an
        // idle slot: claimable runs are announced.
        await web1.notifications.watchRuns("view-1", 60_000);
        await web1.notifications.watchQueue("worker-1", 60_000);
        // The LISTEN sessions open on first subscription.
        await settle();
        const heard = async (step: () => Promise<unknown>) => {
          const before = [...changed];
          await step();
          const deadline = Date.now() + 1_000;
          while ((changed[0] === before[0] || changed[1] === before[1]) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
          expect(changed[0]).toBeGreaterThan(before[0]!);
          expect(changed[1]).toBeGreaterThan(before[1]!);
        };
        const sent = Date.now();
        let ingested: Awaited<ReturnType<typeof store.runs.ingest>> = null;
        let claimed: Awaited<ReturnType<typeof store.runs.claim>> = null;
        await heard(async () => (ingested = await store.runs.ingest(hook("n1", 0))));
        expect(woke.length).toBeGreaterThanOrEqual(1);
        expect(woke[0]! - sent).toBeLessThan(1_000);
        await heard(async () => (claimed = await store.runs.claim("w", at(1_000))));
        await heard(() => store.runs.finish(claimed!, "succeeded", [], null, at(1_001)));
        // What changed is read from the database (the run's times are the test's clock, `at`).
        const seen = await web2.runs.changedAfter(at(0).toISOString(), "");
        expect(seen.filter((c) => c.id === ingested!.runId).map((c) => c.status)).toEqual(["succeeded"]);
      } finally {
        await web1.close();
        await web2.close();
      }
    });

    test("a group commit's batch of runs is announced once, not once per row (the per-row JSON payload cost each ingest ~15 % of PostgreSQL's CPU)", async () => {
      const web = openPostgresStore({ url: TEST_POSTGRES_URL, schema: store.schema, poolSize: 1, alertPolicy });
      try {
        await web.ready();
        await addApplet(store, "b1");
        let changed = 0;
        let queued = 0;
        web.notifications.onRunChanged(() => changed++);
        web.notifications.onQueued(() => queued++);
        await web.notifications.watchRuns("view", 60_000);
        await web.notifications.watchQueue("worker", 60_000);
        await settle();
        const batch = Array.from({ length: 50 }, (_, i) => hook("b1", i, { dedupeKey: `d${i}` }));
        const results = await store.runs.ingestMany(batch);
        expect(results.filter((r) => r && !(r instanceof Error))).toHaveLength(50);
        // The same deliveries again insert nothing and announce nothing.
        expect(await store.runs.ingestMany(batch)).toEqual(batch.map(() => null));
        const deadline = Date.now() + 1_000;
        while ((changed < 1 || queued < 1) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
        await settle();
        expect({ changed, queued }).toEqual({ changed: 1, queued: 1 });
      } finally {
        await web.close();
      }
    });
  });

  test("run changes are announced only while a live view is open somewhere (each announcement wakes every listening session: workers', web processes'); a watcher's row expires", async () => {
    const store = await createTestPostgresStore();
    const web = openPostgresStore({ url: TEST_POSTGRES_URL, schema: store.schema, poolSize: 1, alertPolicy });
    try {
      await web.ready();
      await addApplet(store, "v1");
      let changed = 0;
      let queued = 0;
      web.notifications.onRunChanged(() => changed++);
      web.notifications.onQueued(() => queued++);
      await settle();
      // Nobody watching, a worker idle: an ingest wakes the workers, its claim and finish announce nothing.
      await web.notifications.watchQueue("worker", 60_000);
      const first = await store.runs.ingest(hook("v1", 0));
      const claimed = await store.runs.claim("w", at(1_000));
      await store.runs.finish(claimed!, "succeeded", [], null, at(1_001));
      await settle();
      expect({ changed, queued }).toEqual({ changed: 0, queued: 2 });
      await web.notifications.unwatchQueue("worker");
      expect(first).not.toBeNull();
      // A live view opens (as lib/bus/live.ts does for an SSE stream): every change is announced.
      await web.notifications.watchRuns("view", 1_000);
      await store.runs.ingest(hook("v1", 2_000));
      await settle();
      expect(changed).toBe(1);
      const next = await store.runs.claim("w", at(3_000));
      await settle();
      expect(changed).toBe(2);
      // Not renewed: a second later nothing is announced again (PostgreSQL's clock decides).
      await new Promise((r) => setTimeout(r, 1_000));
      await store.runs.finish(next!, "succeeded", [], null, at(3_001));
      await settle();
      expect(changed).toBe(2);
      // Renewing is one row per process, whatever the number of renewals.
      await web.notifications.watchRuns("view", 60_000);
      await web.notifications.watchRuns("view", 60_000);
      expect((await store.pool.query("SELECT id FROM live_watchers")).rows).toEqual([{ id: "view" }]);
      // A session with another search_path (an operator's psql) still changes runs: the trigger keeps its schema.
      const other = new pg.Client({ connectionString: TEST_POSTGRES_URL });
      await other.connect();
      try {
        await other.query(`UPDATE ${store.schema}.runs SET updated_at = updated_at, status = status WHERE applet_id = 'v1'`);
      } finally {
        await other.end();
      }
    } finally {
      await web.close();
      await store.cleanup();
    }
  });

  test("claimable runs are announced only while a worker says it has an idle slot (an announcing commit holds the server's notification lock through its WAL flush); going idle waits for the transactions that may have missed the row", async () => {
    const store = await createTestPostgresStore();
    const worker = openPostgresStore({ url: TEST_POSTGRES_URL, schema: store.schema, poolSize: 2, alertPolicy });
    const producer = new pg.Client({ connectionString: TEST_POSTGRES_URL, options: `-c search_path=${store.schema}` });
    try {
      await worker.ready();
      await producer.connect();
      await addApplet(store, "q1");
      let queued = 0;
      worker.notifications.onQueued(() => queued++);
      await settle();
      // Every slot busy (no row): an ingest, a claim and a finish announce nothing, and the commits
      // take no notification lock.
      await store.runs.ingest(hook("q1", 0));
      const first = await store.runs.claim("w", at(1_000));
      await store.runs.finish(first!, "succeeded", [], null, at(1_001));
      await settle();
      expect(queued).toBe(0);
      // A slot idle: a queued run and a finish that frees an applet are announced.
      await worker.notifications.watchQueue("w", 60_000);
      await store.runs.ingest(hook("q1", 2_000));
      await settle();
      expect(queued).toBe(1);
      const second = await store.runs.claim("w", at(3_000));
      await store.runs.finish(second!, "succeeded", [], null, at(3_001));
      await settle();
      expect(queued).toBe(2);
      // Busy again: the row goes (one per worker, whatever the renewals), and so do announcements.
      await worker.notifications.watchQueue("w", 60_000, { settle: false });
      expect((await store.pool.query("SELECT id FROM queue_watchers")).rows).toEqual([{ id: "w" }]);
      await worker.notifications.unwatchQueue("w");
      await store.runs.ingest(hook("q1", 4_000));
      await settle();
      expect(queued).toBe(2);

      // A transaction that queued a run and looked for a watcher before the row went in (so it
      // announces nothing) is still open: going idle waits until it has ended, so the look at the
      // queue that follows sees its run.
      await producer.query("BEGIN");
      await producer.query(Q.INGEST, ["late-event", "q1", "webhook", null, "{}", at(5_000).toISOString(), "late-run", 5]);
      let idleAt = 0;
      const going = worker.notifications.watchQueue("w", 60_000).then(() => (idleAt = performance.now()));
      await settle();
      expect(idleAt).toBe(0);
      const committedAt = performance.now();
      await producer.query("COMMIT");
      await going;
      expect(idleAt).toBeGreaterThanOrEqual(committedAt);
      const runs = (await worker.pool.query<{ id: string }>("SELECT id FROM runs WHERE status = 'queued' ORDER BY created_at")).rows.map((r) => r.id);
      expect(runs).toContain("late-run");
      await settle();
      expect(queued).toBe(2);
      // A transaction left open for good (an operator's psql) holds it up for a second at most.
      await producer.query("BEGIN");
      await producer.query("UPDATE applets SET name = name WHERE id = 'q1'");
      const t0 = performance.now();
      await worker.notifications.watchQueue("w", 60_000);
      expect(performance.now() - t0).toBeGreaterThanOrEqual(900);
      expect(performance.now() - t0).toBeLessThan(3_000);
      await producer.query("ROLLBACK");
    } finally {
      await producer.end().catch(() => undefined);
      await worker.close();
      await store.cleanup();
    }
  });

  test("a process whose SECRETS_KEY or SESSION_SECRET differs from the database's refuses to start, and the keys are never stored", async () => {
    const { schema, drop } = await createTestSchema("keys");
    const key = Buffer.alloc(32, 1);
    try {
      const first = openPostgresStore({ url: TEST_POSTGRES_URL, schema, poolSize: 1, keys: { secretsKey: key, sessionSecret: "s1" }, alertPolicy });
      await first.ready();
      const stored = (await first.pool.query<{ value: string }>("SELECT value FROM instance")).rows.map((r) => r.value);
      expect(stored).toHaveLength(2);
      expect(stored.join()).not.toContain(key.toString("base64"));
      expect(stored.join()).not.toContain("s1");
      await first.close();

      const same = openPostgresStore({ url: TEST_POSTGRES_URL, schema, poolSize: 1, keys: { secretsKey: key, sessionSecret: "s1" }, alertPolicy });
      await expect(same.ready()).resolves.toBeUndefined();
      await same.close();

      const otherKey = openPostgresStore({ url: TEST_POSTGRES_URL, schema, poolSize: 1, keys: { secretsKey: Buffer.alloc(32, 2), sessionSecret: "s1" }, alertPolicy });
      await expect(otherKey.ready()).rejects.toThrow(/SECRETS_KEY differs from the one this database was initialised with.*Refusing to start/);
      await expect(otherKey.applets.list()).rejects.toThrow(/SECRETS_KEY differs/);
      await otherKey.close();

      const otherSession = openPostgresStore({ url: TEST_POSTGRES_URL, schema, poolSize: 1, keys: { secretsKey: key, sessionSecret: "s2" }, alertPolicy });
      await expect(otherSession.ready()).rejects.toThrow(/SESSION_SECRET differs/);
      await otherSession.close();
    } finally {
      await drop();
    }
  });
  test("a claim planned while the queue was empty (a generic plan, kept until the next ANALYZE) still finds its run in a few index seeks when 5,000 are queued", async () => {
    const store = await createTestPostgresStore();
    const c = await store.pool.connect();
    try {
      for (let a = 0; a < 5; a++) await addApplet(store, `a${a}`);
      // What a worker's connection does on a fresh install: its first claims meet an empty queue,
      // and PostgreSQL keeps a generic plan made from those (near-empty) tables.
      await c.query("SET plan_cache_mode = force_generic_plan");
      await c.query(`PREPARE claim_generic(text, text, text) AS ${Q.CLAIM}`);
      expect((await c.query("EXECUTE claim_generic('w', $1, 'first')".replace("$1", `'${at(0).toISOString()}'`))).rowCount).toBe(0);
      await c.query(`INSERT INTO events (id, applet_id, source, payload, received_at, created_at, updated_at)
        SELECT 'e' || g, 'a' || (g % 5), 'webhook', '{}', $1, $1, $1 FROM generate_series(1, 5000) g`, [at(1).toISOString()]);
      await c.query(`INSERT INTO runs (id, applet_id, event_id, status, next_attempt_at, steps, created_at, updated_at)
        SELECT 'r' || substr(id, 2), applet_id, id, 'queued', received_at, '[]', received_at, received_at FROM events`);
      const explained = (await c.query<{ "QUERY PLAN": [{ Plan: { "Shared Hit Blocks": number; "Shared Read Blocks": number } }] }>(
        `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE claim_generic('w', '${at(2).toISOString()}', 'second')`,
      )).rows[0]!["QUERY PLAN"][0].Plan;
      // Index seeks touch tens of pages; the old plan walked runs_due_idx to the id (about 1,500 here).
      expect(explained["Shared Hit Blocks"] + explained["Shared Read Blocks"]).toBeLessThan(300);
      expect((await c.query("SELECT count(*)::int AS n FROM runs WHERE status = 'running'")).rows[0]).toEqual({ n: 1 });
    } finally {
      c.release();
      await store.cleanup();
    }
  });

  test("a finish-and-claim planned while the queue was empty (statistics of a history of finished runs) still finishes its run by its id and walks the due runs in order when 5,000 are queued (generic plans read every queued run through runs_status_created_idx, then runs_queued_idx, and sorted them at each step of the walk, and found the finishing run among every running entry: 3-4 ms per run under a backlog)", async () => {
    const store = await createTestPostgresStore();
    const c = await store.pool.connect();
    try {
      for (let a = 0; a < 5; a++) await addApplet(store, `a${a}`);
      // A queue in its usual state when the plan is made: a history of finished runs, nothing
      // queued, statistics that say so (ANALYZE, as autovacuum runs it).
      await finishedHistory(c, 5000, 5);
      await c.query("UPDATE runs SET status = 'queued', next_attempt_at = created_at, finished_at = NULL WHERE id IN ('x1', 'x2', 'x3')");
      await c.query("ANALYZE runs");
      await c.query("UPDATE runs SET status = 'succeeded', next_attempt_at = NULL WHERE id IN ('x1', 'x2', 'x3')");
      await c.query("SET plan_cache_mode = force_generic_plan");
      await c.query(`PREPARE fc_generic(text, text, text, text, text, text, text, text) AS ${Q.FINISH_AND_CLAIM}`);
      // FINISH_AND_CLAIM's arguments as SQL literals ($1..$8).
      const args = (run: { id: string; claimToken: string }, now: Date, next: string) =>
        [`'${run.id}'`, `'${run.claimToken}'`, "'succeeded'", "'[]'", "NULL", `'${now.toISOString()}'`, "'w'", `'${next}'`];
      const walkOf = (plan: string) => /CTE oldest\n([\s\S]*?)\n {2}CTE /.exec(plan)?.[1] ?? "";
      // The worker's first finish, on an empty queue, is what makes the plan kept.
      const first = await store.runs.ingest(hook("a0", 0));
      const running = await store.runs.claim("w", at(1));
      expect(running?.id).toBe(first!.runId);
      await c.query(`EXECUTE fc_generic(${args(running!, at(2), "next0").join(", ")})`);
      await queuedBacklog(c, first!.eventId);
      const busy = await store.runs.claim("w", at(10_000));
      expect(busy).not.toBeNull();
      const explained = (await c.query<{ "QUERY PLAN": [{ Plan: { "Shared Hit Blocks": number; "Shared Read Blocks": number } }] }>(
        `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE fc_generic(${args(busy!, at(10_001), "next1").join(", ")})`,
      )).rows[0]!["QUERY PLAN"][0].Plan;
      // The walk in due order reads runs_due_idx in its order (no sort of the queue at each step),
      // and the finish finds its run by its id.
      const plan = await planOf(c, `EXECUTE fc_generic(${args(busy!, at(10_001), "next1").join(", ")})`);
      const walk = walkOf(plan);
      expect(walk).toMatch(/Index Scan using runs_due_idx/);
      expect(walk).not.toMatch(/Sort/);
      // The second pass lands on each applet's head in one seek of runs_queued_idx, in its order.
      const applets = /CTE queued_applets\n([\s\S]*?)\n {2}CTE /.exec(plan)?.[1] ?? "";
      expect(applets).toMatch(/Index Scan using runs_queued_idx/);
      expect(applets).not.toMatch(/Sort/);
      expect(plan).toMatch(/Update on runs[\s\S]*?Index Scan using runs_pkey on runs/);
      // Whatever the statistics: the partial indexes of queued and running runs serve only a
      // statement that names the applet (the bench's generic plan chose runs_queued_idx for the walk
      // and runs_running_idx for the finish when their estimates tied with the right index's).
      await c.query("BEGIN");
      await c.query("DROP INDEX runs_due_idx");
      const literals = args({ id: busy!.id, claimToken: "t" }, at(10_001), "n");
      const withoutDue = await planOf(c, literally(Q.FINISH_AND_CLAIM, literals));
      expect(walkOf(withoutDue)).not.toMatch(/runs_queued_idx/);
      expect(await planOf(c, "SELECT id FROM runs WHERE status = 'running' AND claim_token = 'x'")).not.toMatch(/runs_running_idx/);
      await c.query("ROLLBACK");
      // Index seeks: tens of pages. The plan made from an idle queue's statistics read the 5,000 queued runs (~130 pages) at each step.
      expect(explained["Shared Hit Blocks"] + explained["Shared Read Blocks"]).toBeLessThan(120);
      expect((await c.query("SELECT status, count(*)::int AS n FROM runs WHERE id = $1 OR status = 'running' GROUP BY status ORDER BY status", [busy!.id])).rows).toEqual([
        { status: "running", n: 1 },
        { status: "succeeded", n: 1 },
      ]);
    } finally {
      c.release();
      await store.cleanup();
    }
  });

  test("several finishes and their claims in one statement, planned while the queue was empty, find the finishing runs by their ids and walk the due runs in order when 5,000 are queued", async () => {
    const store = await createTestPostgresStore();
    const c = await store.pool.connect();
    try {
      for (let a = 0; a < 5; a++) await addApplet(store, `a${a}`);
      await finishedHistory(c, 5000, 5);
      await c.query("ANALYZE runs");
      await c.query("SET plan_cache_mode = force_generic_plan");
      await c.query(`PREPARE fm_generic(text[], text[], text[], text[], text[], text[], text, text) AS ${Q.FINISH_MANY_AND_CLAIM}`);
      const array = (values: string[]) => `ARRAY[${values.map((v) => `'${v}'`).join(", ")}]::text[]`;
      const args = (runs: ClaimedRun[], now: Date) => {
        const at = runs.map(() => now.toISOString());
        return [array(runs.map((r) => r.id)), array(runs.map((r) => r.claimToken)), array(runs.map(() => "succeeded")), array(runs.map(() => "[]")), "ARRAY[NULL, NULL]::text[]", array(at), `'${now.toISOString()}'`, "'w'"].join(", ");
      };
      // The first batch, on an empty queue, is what makes the plan kept.
      for (const a of ["a0", "a1"]) await store.runs.ingest(hook(a, 0));
      const idle = [(await store.runs.claim("w", at(1)))!, (await store.runs.claim("w", at(1)))!];
      expect((await c.query(`EXECUTE fm_generic(${args(idle, at(2))})`)).rows).toMatchObject([{ finished: expect.arrayContaining(idle.map((r) => r.id)), id: null }]);
      await queuedBacklog(c);
      const busy = [(await store.runs.claim("w", at(10_000)))!, (await store.runs.claim("w", at(10_000)))!];
      const plan = await planOf(c, `EXECUTE fm_generic(${args(busy, at(10_001))})`);
      expect(plan).toMatch(/Update on runs[\s\S]*?Index Scan using runs_pkey on runs/);
      const walk = /CTE oldest\n([\s\S]*?)\n {2}CTE /.exec(plan)?.[1] ?? "";
      expect(walk).toMatch(/Index Scan using runs_due_idx/);
      expect(walk).not.toMatch(/Sort/);
      const explained = (await c.query<{ "QUERY PLAN": [{ Plan: { "Shared Hit Blocks": number; "Shared Read Blocks": number } }] }>(
        `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE fm_generic(${args(busy, at(10_001))})`,
      )).rows[0]!["QUERY PLAN"][0].Plan;
      // Two finishes and two claims in index seeks (~120 pages here), not a read of the 5,000 queued runs.
      expect(explained["Shared Hit Blocks"] + explained["Shared Read Blocks"]).toBeLessThan(200);
      expect((await c.query("SELECT status, count(*)::int AS n FROM runs WHERE id = ANY($1) OR status = 'running' GROUP BY status ORDER BY status", [busy.map((r) => r.id)])).rows).toEqual([
        { status: "running", n: 2 },
        { status: "succeeded", n: 2 },
      ]);
    } finally {
      c.release();
      await store.cleanup();
    }
  });

  test("the queue's vacuum removes what runs that left the queue leave in its indexes, which every claim read past until a vacuum came by, and does nothing when too few runs changed", async () => {
    const store = await createTestPostgresStore();
    const c = await store.pool.connect();
    try {
      await addApplet(store, "a0");
      // A history of 20,000 finished runs, vacuumed, then 3,000 runs through the queue as workers
      // take them: queued, running, succeeded, each change a new row version and new index entries.
      await c.query(`INSERT INTO events (id, applet_id, source, payload, received_at, created_at, updated_at)
        SELECT 'h' || lpad(g::text, 6, '0'), 'a0', 'webhook', '{}', t, t, t
        FROM generate_series(1, 23000) g, LATERAL (SELECT to_char(($1::timestamptz + g * interval '1 ms') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS t) ts`, [T0.toISOString()]);
      await c.query(`INSERT INTO runs (id, applet_id, event_id, status, next_attempt_at, steps, finished_at, created_at, updated_at)
        SELECT 'x' || substr(id, 2), applet_id, id, CASE WHEN id <= 'h020000' THEN 'succeeded' ELSE 'queued' END,
               CASE WHEN id <= 'h020000' THEN NULL ELSE received_at END, '[]', NULL, received_at, received_at FROM events`);
      await c.query("VACUUM ANALYZE runs");
      await c.query(`DO $$ DECLARE r record; BEGIN
        FOR r IN SELECT id FROM runs WHERE status = 'queued' ORDER BY id LOOP
          UPDATE runs SET status = 'running' WHERE id = r.id;
          UPDATE runs SET status = 'succeeded', next_attempt_at = NULL WHERE id = r.id;
        END LOOP; END $$`);
      const fresh = await store.runs.ingest(hook("a0", 60_000));
      // Pages a claim touches, without taking the run (rolled back).
      const claimPages = async () => {
        await c.query("BEGIN");
        try {
          const literal = literally(Q.CLAIM, ["'w'", `'${at(61_000).toISOString()}'`, "'t'"]);
          const plan = (await c.query<{ "QUERY PLAN": [{ Plan: { "Shared Hit Blocks": number; "Shared Read Blocks": number } }] }>(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${literal}`)).rows[0]!["QUERY PLAN"][0].Plan;
          expect((await c.query<{ id: string }>("SELECT id FROM runs WHERE status = 'running'")).rows.map((r) => r.id)).toEqual([fresh!.runId]);
          return plan["Shared Hit Blocks"] + plan["Shared Read Blocks"];
        } finally {
          await c.query("ROLLBACK");
        }
      };
      const before = await claimPages();
      expect(await store.maintenance.vacuumQueue!({ minChanges: 1_000 })).toMatchObject({ vacuumed: true });
      const after = await claimPages();
      // The walk read past the 3,000 runs' entries (390 pages here); now a few seeks (39).
      expect(before).toBeGreaterThan(3 * after);
      expect(after).toBeLessThan(60);
      // Nothing changed since: no second vacuum (the statistics counted 6,000 changes the first time).
      await new Promise((r) => setTimeout(r, 1_100));
      expect(await store.maintenance.vacuumQueue!({ minChanges: 1_000 })).toEqual({ vacuumed: false, ms: 0 });
      const claimed = await store.runs.claim("w", at(61_000));
      expect(claimed?.id).toBe(fresh!.runId);
    } finally {
      c.release();
      await store.cleanup();
    }
  });

  test("the statements that look for queued or running runs of any applet (every worker's stale-run check every 10 s, the queue tally of health and metrics, the workers' prune) read the partial indexes, not the whole history (since drizzle-pg/0015 they could not, and the stale-run check read every run ever stored)", async () => {
    const store = await createTestPostgresStore();
    const c = await store.pool.connect();
    try {
      await addApplet(store, "a0");
      await finishedHistory(c, 5000, 1);
      await c.query("UPDATE runs SET status = 'queued', next_attempt_at = created_at, finished_at = NULL WHERE id IN ('x1', 'x2')");
      await c.query("UPDATE runs SET status = 'running', locked_by = 'w', locked_at = created_at, claim_token = 't', finished_at = NULL WHERE id = 'x3'");
      await c.query("ANALYZE runs");
      // Whatever the statistics say: a sequential scan stays in the plan only when no index can serve it.
      await c.query("SET enable_seqscan = off");
      const now = `'${at(60_000).toISOString()}'`;
      for (const [sql, params] of [
        [Q.STALE, [now, `'${T0.toISOString()}'`, "'w'", "ARRAY['gone']", `'${T0.toISOString()}'`, "ARRAY['x3']"]],
        [Q.QUEUE_TALLY, [now]],
        [Q.PRUNE_WORKERS, [now]],
      ] as const) {
        expect(await planOf(c, literally(sql, params))).not.toMatch(/Seq Scan on runs/);
      }
      // And they still answer.
      expect((await store.runs.tally(T0.toISOString(), at(60_000))).queued).toBe(2);
      const recovered = await store.runs.recoverStale({ now: at(60_000), stuckBefore: at(30_000) });
      expect(recovered.map((r) => r.id)).toEqual(["x3"]);
    } finally {
      c.release();
      await store.cleanup();
    }
  });
});
