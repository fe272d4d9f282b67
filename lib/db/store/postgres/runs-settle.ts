import { randomUUID } from "node:crypto";
import { toClaimed, toRun } from "../run-row";
import type { Step } from "../types/runs";
import type { ClaimedRun, FinalStatus, RecoveredRun, RunsStore } from "../types";
import type { AlertRecorder } from "./alerts";
import { query, sqlState, type Begin, type Queryable } from "./pool";
import * as Q from "./queue-sql";
import { createLanes } from "./settles";
import type { RunRaw } from "./runs-read";

/** A claim's row: the run, its event's and applet's columns (null when gone) and the replay flag (Q.CLAIM). */
interface ClaimRaw extends RunRaw {
  ev_id: string | null;
  ev_applet_id: string;
  ev_source: string;
  ev_dedupe_key: string | null;
  ev_payload: string;
  ev_received_at: string;
  ap_id: string | null;
  ap_name: string;
  ap_definition: string;
  ap_updated_at: string;
  replay: boolean;
}

const toClaimedRun = (r: ClaimRaw, token: string): ClaimedRun =>
  toClaimed(toRun(r), token, {
    event: r.ev_id === null ? null : { id: r.ev_id, applet_id: r.ev_applet_id, source: r.ev_source, dedupe_key: r.ev_dedupe_key, payload: r.ev_payload, received_at: r.ev_received_at },
    applet: r.ap_id === null ? null : { id: r.ap_id, name: r.ap_name, definition: r.ap_definition, updated_at: r.ap_updated_at },
    replay: r.replay,
  });

/** Two claims raced for one applet and this one lost on runs_running_idx: claim again. */
const lostRace = (err: unknown) => sqlState(err) === "23505" && (err as { constraint?: string }).constraint === "runs_running_idx";

/** `fn` again while it loses that race (nothing of its statement went in), three times at most; undefined after the third. */
async function unlessRaced<T>(fn: () => Promise<T>): Promise<T | undefined> {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (!lostRace(err)) throw err;
    }
  }
  return undefined;
}

/**
 * One claim on `c`. Inside a transaction a lost race would abort it, so the claim runs under a
 * savepoint there; in autocommit it is simply tried again.
 */
async function claimOn(c: Queryable, workerId: string, now: Date, inTx: boolean): Promise<ClaimedRun | null> {
  for (let attempt = 0; ; attempt++) {
    const token = randomUUID();
    try {
      if (inTx) await c.query("SAVEPOINT claim");
      const row = (await query<ClaimRaw>(c, Q.CLAIM, [workerId, now.toISOString(), token])).rows[0];
      if (inTx) await c.query("RELEASE SAVEPOINT claim");
      return row ? toClaimedRun(row, token) : null;
    } catch (err) {
      if (inTx) await c.query("ROLLBACK TO SAVEPOINT claim");
      if (!lostRace(err) || attempt >= 4) throw err;
    }
  }
}

/**
 * The alerts the settle means (the store's alert policy decides) are recorded on the same client,
 * so `c` must be a transaction's (`finish` opens one).
 */
async function finishOn(c: Queryable, alerts: AlertRecorder, run: ClaimedRun, status: FinalStatus, steps: Step[] | null, error: string | null, now: Date): Promise<boolean> {
  const at = now.toISOString();
  const r = await query<{ id: string; alert_open: number }>(c, Q.FINISH_AND_COUNT, [run.id, run.claimToken, status, steps === null ? null : JSON.stringify(steps), error, at]);
  const bumped = r.rows[0];
  if (r.rowCount !== 1 || !bumped) return false;
  if (alerts.settleNeedsAlertState(status, bumped.alert_open === 1)) await alerts.recordSettled(c, run.appletId, { id: run.id, status, error, attempt: run.attempt }, at);
  return true;
}

type Settle = { run: ClaimedRun; status: FinalStatus; steps: Step[] | null; error: string | null; now: Date; workerId: string };
type Settled = { ok: boolean; next: ClaimedRun | null };

/** A settle in a transaction of its own, and the one-statement settles of one worker grouped in lanes (settles.ts). */
function settlesOn(q: Queryable, begin: Begin, alerts: AlertRecorder) {
  const settleInTx = (s: Settle): Promise<Settled> =>
    begin(async (c) => {
      const ok = await finishOn(c, alerts, s.run, s.status, s.steps, s.error, s.now);
      return { ok, next: await claimOn(c, s.workerId, s.now, true) };
    });
  /** One run's finish and the next claim in one statement (Q.FINISH_AND_CLAIM); a success that owes alert state, a lost claim or a race lost three times take the transaction. */
  const settleAlone = async (s: Settle): Promise<Settled> => {
    const params = [s.run.id, s.run.claimToken, s.status, s.steps === null ? null : JSON.stringify(s.steps), s.error, s.now.toISOString(), s.workerId];
    const done = await unlessRaced(async () => {
      const token = randomUUID();
      return { token, row: (await query<ClaimRaw & { finished: number }>(q, Q.FINISH_AND_CLAIM, [...params, token])).rows[0] };
    });
    if (done?.row?.finished === 1) return { ok: true, next: done.row.id === null ? null : toClaimedRun(done.row, done.token) };
    return settleInTx(s);
  };
  /**
   * Several of one worker's settles in one statement (Q.FINISH_MANY_AND_CLAIM), the claims handed
   * to the runs whose finish went in, in order; a run whose finish did not go in (its claim lost,
   * alert state owed) is settled alone, as it would have been without the others.
   */
  const settleMany = async (items: Settle[]): Promise<Settled[]> => {
    if (items.length === 1) return [await settleAlone(items[0]!)];
    const claimAt = new Date(Math.max(...items.map((i) => i.now.getTime()))).toISOString();
    const params = [
      items.map((i) => i.run.id),
      items.map((i) => i.run.claimToken),
      items.map((i) => i.status),
      items.map((i) => (i.steps === null ? null : JSON.stringify(i.steps))),
      items.map((i) => i.error),
      items.map((i) => i.now.toISOString()),
      claimAt,
      items[0]!.workerId,
    ];
    const rows = (await unlessRaced(async () => (await query<ClaimRaw & { finished: string[] | null }>(q, Q.FINISH_MANY_AND_CLAIM, params)).rows)) ?? [];
    const finished = new Set(rows[0]?.finished ?? []);
    const claimed = rows.filter((r) => r.id !== null).map((r) => toClaimedRun(r, r.claim_token!));
    const out: Settled[] = [];
    for (const i of items) out.push(finished.has(i.run.id) ? { ok: true, next: claimed.shift() ?? null } : await settleAlone(i));
    return out;
  };
  const settles = createLanes(settleMany);
  return { settleInTx, settles };
}

/** The queue's writes of a claimed run: claim, progress, settle, requeue, release, recovery. */
export function runsSettle(q: Queryable, begin: Begin, alerts: AlertRecorder): Pick<RunsStore, "claim" | "saveSteps" | "finish" | "finishAndClaim" | "retryLater" | "release" | "recoverStale"> {
  // A checked-out client is inside a transaction (Store#transaction); the pool is autocommit.
  const inTx = "release" in q;
  const { settleInTx, settles } = settlesOn(q, begin, alerts);

  return {
    claim: (workerId, now) => claimOn(q, workerId, now, inTx),

    saveSteps: async (run, steps, now) => (await query(q, Q.SAVE_STEPS, [run.id, run.claimToken, JSON.stringify(steps), now.toISOString()])).rowCount === 1,

    finish: (run, status, steps, error, now) => begin((c) => finishOn(c, alerts, run, status, steps, error, now)),

    finishAndClaim: (run, status, steps, error, now, workerId) => {
      const settle = { run, status, steps, error, now, workerId };
      // The common case goes in one statement, with the other slots' of this worker when they come
      // together (settles.ts); a failure or a settle inside a unit of work takes the transaction.
      return !inTx && (status === "succeeded" || status === "skipped") ? settles.push(workerId, settle) : settleInTx(settle);
    },

    // After the first attempt the requeue and the alert it may mean (Settings: alert on the first
    // failed attempt) go in one transaction; later attempts take the one statement.
    retryLater: async (run, steps, error, nextAttemptAt, now) => {
      const requeue = async (c: Queryable) =>
        (await query(c, Q.REQUEUE, [run.id, run.claimToken, nextAttemptAt.toISOString(), JSON.stringify(steps), error, now.toISOString()])).rowCount === 1;
      if (run.attempt !== 1) return requeue(q);
      const withAlert = async (c: Queryable) => {
        const ok = await requeue(c);
        if (ok) await alerts.recordRetrying(c, run.appletId, { id: run.id, error, attempt: run.attempt, maxAttempts: run.maxAttempts, nextAttemptAt: nextAttemptAt.toISOString() }, now.toISOString());
        return ok;
      };
      return inTx ? withAlert(q) : begin(withAlert);
    },

    release: async (run, now) => (await query(q, Q.RELEASE, [run.id, run.claimToken, now.toISOString()])).rowCount === 1,

    recoverStale: async ({ now, stuckBefore, self, gone = [], holding }) => {
      const at = now.toISOString();
      const found = (
        await query<{ id: string; applet_id: string; claim_token: string | null; locked_by: string | null; reason: RecoveredRun["reason"] }>(q, Q.STALE, [
          at,
          stuckBefore.toISOString(),
          self ?? null,
          gone,
          holding ? holding.lockedBefore.toISOString() : null,
          holding?.ids ?? [],
        ])
      ).rows;
      if (found.length === 0) return [];
      const recovered: RecoveredRun[] = [];
      for (const r of found) {
        if ((await query(q, Q.RECOVER, [r.id, r.claim_token, at])).rowCount === 1) {
          recovered.push({ id: r.id, appletId: r.applet_id, lockedBy: r.locked_by, reason: r.reason });
        }
      }
      return recovered;
    },
  };
}
