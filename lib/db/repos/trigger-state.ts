import type { Sqlite } from "../client";
import type { TriggerState } from "../../triggers/types";

interface Raw {
  applet_id: string;
  next_run_at: string | null;
  last_polled_at: string | null;
  seen_keys: string;
  last_value: string | null;
  etag: string | null;
  last_modified: string | null;
  last_error: string | null;
  error_count: number;
}

export const emptyTriggerState = (): TriggerState => ({
  nextRunAt: null,
  lastPolledAt: null,
  seenKeys: [],
  lastValue: null,
  etag: null,
  lastModified: null,
  lastError: null,
  errorCount: 0,
});

const toState = (r: Raw): TriggerState => ({
  nextRunAt: r.next_run_at,
  lastPolledAt: r.last_polled_at,
  seenKeys: JSON.parse(r.seen_keys) as string[],
  lastValue: r.last_value === null ? null : JSON.parse(r.last_value),
  etag: r.etag,
  lastModified: r.last_modified,
  lastError: r.last_error,
  errorCount: r.error_count,
});

export type TriggerStateRepo = ReturnType<typeof createTriggerStateRepo>;

/** One row per applet; only the scheduler (and applet save/enable, for next_run_at) writes it. */
export function createTriggerStateRepo(sqlite: Sqlite) {
  const get = sqlite.prepare<[string], Raw>("SELECT * FROM trigger_state WHERE applet_id = ?");
  const upsert = sqlite.prepare(
    `INSERT INTO trigger_state (applet_id, next_run_at, last_polled_at, seen_keys, last_value, etag, last_modified, last_error, error_count, created_at, updated_at)
     VALUES (@appletId, @nextRunAt, @lastPolledAt, @seenKeys, @lastValue, @etag, @lastModified, @lastError, @errorCount, @now, @now)
     ON CONFLICT(applet_id) DO UPDATE SET next_run_at = excluded.next_run_at, last_polled_at = excluded.last_polled_at,
       seen_keys = excluded.seen_keys, last_value = excluded.last_value, etag = excluded.etag, last_modified = excluded.last_modified,
       last_error = excluded.last_error, error_count = excluded.error_count, updated_at = excluded.updated_at`,
  );
  const setNext = sqlite.prepare(
    `INSERT INTO trigger_state (applet_id, next_run_at, created_at, updated_at) VALUES (?, ?, ?, ?)
     ON CONFLICT(applet_id) DO UPDATE SET next_run_at = excluded.next_run_at, updated_at = excluded.updated_at`,
  );
  const claimSlot = sqlite.prepare(
    "UPDATE trigger_state SET next_run_at = ?, updated_at = ? WHERE applet_id = ? AND next_run_at IS ?",
  );
  return {
    get: (appletId: string): TriggerState | null => {
      const r = get.get(appletId);
      return r ? toState(r) : null;
    },
    save: (appletId: string, s: TriggerState, now: string): void =>
      void upsert.run({
        appletId,
        nextRunAt: s.nextRunAt,
        lastPolledAt: s.lastPolledAt,
        seenKeys: JSON.stringify(s.seenKeys),
        lastValue: s.lastValue === undefined || s.lastValue === null ? null : JSON.stringify(s.lastValue),
        etag: s.etag,
        lastModified: s.lastModified,
        lastError: s.lastError,
        errorCount: s.errorCount,
        now,
      }),
    /** The one source of next_run_at for a saved or enabled applet. */
    setNextRunAt: (appletId: string, nextRunAt: string | null, now: string): void => void setNext.run(appletId, nextRunAt, now, now),
    /** Atomically moves next_run_at from the slot we saw to the next one: false when another worker got there first. */
    claimSlot: (appletId: string, expected: string | null, next: string, now: string): boolean =>
      claimSlot.run(next, now, appletId, expected).changes === 1,
  };
}
