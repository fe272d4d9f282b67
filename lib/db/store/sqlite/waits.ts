import type { Step } from "../types/runs";
import type { ClaimedRun, StoredWait, WaitInsert, WaitResolve } from "../types";
import { outputText, toWait, WAIT_COLUMNS, type WaitRaw } from "../wait-row";
import type { Sqlite } from "./client";

/** The tick's read: the due waits, oldest first, through run_waits_due_idx (the partial index on unresolved waits' resume_at). */
export const DUE_WAITS = `SELECT run_id, seq, resume_as FROM run_waits WHERE resolution IS NULL AND resume_at IS NOT NULL AND resume_at <= ? ORDER BY resume_at LIMIT ?`;

/** Waiting runs on SQLite (the contract: WaitsStore in ../types.ts). Each method is one transaction. */
export function createWaitsRepo(sqlite: Sqlite) {
  const park = sqlite.prepare(
    `UPDATE runs SET status = 'waiting', steps = @steps, error = @summary, locked_by = NULL, locked_at = NULL, claim_token = NULL, next_attempt_at = NULL, holds_lane = @holds, updated_at = @now
     WHERE id = @id AND claim_token = @token AND status = 'running'`,
  );
  const insert = sqlite.prepare(
    `INSERT INTO run_waits (run_id, seq, applet_id, step_id, kind, resume_at, resume_as, timeout_at, detail, created_at, updated_at)
     VALUES (@runId, @seq, @appletId, @stepId, @kind, @resumeAt, @resumeAs, @timeoutAt, @detail, @now, @now)
     ON CONFLICT (run_id, seq) DO NOTHING`,
  );
  const one = sqlite.prepare<[string, number], WaitRaw>(`SELECT ${WAIT_COLUMNS} FROM run_waits w JOIN runs r ON r.id = w.run_id WHERE w.run_id = ? AND w.seq = ?`);
  const pending = sqlite.prepare<[string], WaitRaw>(
    `SELECT ${WAIT_COLUMNS} FROM run_waits w JOIN runs r ON r.id = w.run_id WHERE w.run_id = ? AND w.resolution IS NULL AND r.status = 'waiting' ORDER BY w.seq DESC LIMIT 1`,
  );
  const settle = sqlite.prepare(
    `UPDATE run_waits SET resolution = @resolution, resolved_at = @now, resolved_by = @by, output = @output, updated_at = @now
     WHERE run_id = @runId AND seq = @seq AND resolution IS NULL`,
  );
  const early = sqlite.prepare(
    `INSERT INTO run_waits (run_id, seq, applet_id, step_id, kind, resolution, resolved_at, resolved_by, output, created_at, updated_at)
     SELECT @runId, @seq, @appletId, '', @kind, @resolution, @now, @by, @output, @now, @now FROM runs WHERE id = @runId AND status IN ('queued', 'running')
     ON CONFLICT (run_id, seq) DO NOTHING`,
  );
  // A run that held its lane while it waited (strict order) is queued as its lane's head: due since
  // it was created, before every later run of the lane, which strict order kept queued behind it.
  const requeue = sqlite.prepare(
    `UPDATE runs SET status = 'queued', error = NULL, next_attempt_at = CASE WHEN holds_lane = 1 THEN created_at ELSE @now END, holds_lane = 0, updated_at = @now
     WHERE id = @id AND status = 'waiting'`,
  );
  const due = sqlite.prepare<[string, number], { run_id: string; seq: number; resume_as: string }>(DUE_WAITS);
  const cancelRun = sqlite.prepare(
    `UPDATE runs SET status = 'cancelled', error = @reason, finished_at = @now, holds_lane = 0, updated_at = @now WHERE id = @id AND status = 'waiting'`,
  );
  const cancelWaits = sqlite.prepare(
    `UPDATE run_waits SET resolution = 'cancelled', resolved_at = @now, resolved_by = @by, updated_at = @now WHERE run_id = @id AND resolution IS NULL`,
  );
  const waitingAll = sqlite.prepare<[number], WaitRaw>(
    `SELECT ${WAIT_COLUMNS} FROM run_waits w JOIN runs r ON r.id = w.run_id WHERE w.resolution IS NULL AND r.status = 'waiting'
     ORDER BY w.resume_at IS NULL, w.resume_at, w.run_id LIMIT ?`,
  );
  const waitingOf = sqlite.prepare<[string, number], WaitRaw>(
    `SELECT ${WAIT_COLUMNS} FROM run_waits w JOIN runs r ON r.id = w.run_id WHERE w.applet_id = ? AND w.resolution IS NULL AND r.status = 'waiting'
     ORDER BY w.resume_at IS NULL, w.resume_at, w.run_id LIMIT ?`,
  );
  const counts = sqlite.prepare<[], { kind: string; n: number }>(
    `SELECT w.kind, COUNT(*) AS n FROM run_waits w JOIN runs r ON r.id = w.run_id WHERE w.resolution IS NULL AND r.status = 'waiting' GROUP BY w.kind`,
  );

  const get = (runId: string, seq: number): StoredWait | null => {
    const row = one.get(runId, seq);
    return row ? toWait(row) : null;
  };

  const suspendTx = sqlite.transaction((run: ClaimedRun, steps: Step[], w: WaitInsert, now: string): "waiting" | "queued" | "lost" => {
    if (park.run({ id: run.id, token: run.claimToken, steps: JSON.stringify(steps), summary: w.summary, holds: w.holdsLane ? 1 : 0, now }).changes !== 1) return "lost";
    insert.run({
      runId: run.id,
      seq: w.seq,
      appletId: run.appletId,
      stepId: w.stepId,
      kind: w.kind,
      resumeAt: w.resumeAt?.toISOString() ?? null,
      resumeAs: w.resumeAs,
      timeoutAt: w.timeoutAt?.toISOString() ?? null,
      detail: JSON.stringify(w.detail),
      now,
    });
    if (one.get(run.id, w.seq)?.resolution == null) return "waiting";
    requeue.run({ id: run.id, now });
    return "queued";
  });

  const resolveTx = sqlite.transaction((r: WaitResolve) => {
    const now = r.now.toISOString();
    const params = { runId: r.runId, seq: r.seq, resolution: r.resolution, by: r.by, output: outputText(r.output), now };
    if (settle.run(params).changes === 1) {
      requeue.run({ id: r.runId, now });
      return { resolved: true as const };
    }
    if (r.early && early.run({ ...params, appletId: r.early.appletId, kind: r.early.kind }).changes === 1) return { resolved: true as const };
    return { resolved: false as const, wait: get(r.runId, r.seq) };
  });

  const resumeDueTx = sqlite.transaction((now: string, limit: number): number => {
    let n = 0;
    for (const d of due.all(now, limit)) {
      if (settle.run({ runId: d.run_id, seq: d.seq, resolution: d.resume_as ?? "time", by: "clock", output: null, now }).changes !== 1) continue;
      requeue.run({ id: d.run_id, now });
      n++;
    }
    return n;
  });

  const cancelTx = sqlite.transaction((runId: string, by: string, reason: string, now: string): boolean => {
    if (cancelRun.run({ id: runId, reason, now }).changes !== 1) return false;
    cancelWaits.run({ id: runId, by, now });
    return true;
  });

  return {
    suspend: (run: ClaimedRun, steps: Step[], wait: WaitInsert, now: Date) => suspendTx(run, steps, wait, now.toISOString()),
    get,
    pendingOf: (runId: string): StoredWait | null => {
      const row = pending.get(runId);
      return row ? toWait(row) : null;
    },
    resolve: (r: WaitResolve) => resolveTx(r),
    resumeDue: (now: Date, limit: number) => resumeDueTx(now.toISOString(), limit),
    cancel: (runId: string, by: string, reason: string, now: Date) => cancelTx(runId, by, reason, now.toISOString()),
    listWaiting: (opts: { appletId?: string; limit: number }): StoredWait[] =>
      (opts.appletId ? waitingOf.all(opts.appletId, opts.limit) : waitingAll.all(opts.limit)).map(toWait),
    countWaiting: (): Record<string, number> => Object.fromEntries(counts.all().map((c) => [c.kind, Number(c.n)])),
  };
}
