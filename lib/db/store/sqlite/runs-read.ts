import { decodeCursor, encodeCursor, toRun } from "../run-row";
import type { Sqlite } from "./client";
import { readJson } from "../json";
import type { RunStatus } from "../types/runs";
import type { runs } from "./schema";
import { RUN_SEARCH_PAYLOAD_BYTES, RUN_SEARCH_SCAN, type AppletRunStats, type EventRun, type Run, type RunChange, type RunListFilter, type RunPage, type RunTally, type RecentEvent, type StoredEvent } from "../types";
import type { RawRow } from "./rows";

type RunRowRaw = RawRow<typeof runs>;

/** A page of runs, newest first, by keyset cursor; a search is bounded (RUN_SEARCH_SCAN). */
export function listRuns(sqlite: Sqlite, f: RunListFilter): RunPage {
  const limit = Math.min(Math.max(f.limit ?? 50, 1), 200);
  const where: string[] = [];
  const args: unknown[] = [];
  const add = (clause: string, value: unknown) => {
    where.push(clause);
    args.push(value);
  };
  if (f.appletId) add("r.applet_id = ?", f.appletId);
  // `retrying` is a queued run after a failed attempt, and `queued` the ones not yet tried (lib/ui/run-status).
  if (f.status === "retrying") where.push("r.status = 'queued' AND r.attempt > 1");
  else if (f.status === "queued") where.push("r.status = 'queued' AND r.attempt = 1");
  else if (f.status) add("r.status = ?", f.status);
  if (f.reason) add("r.reason = ?", f.reason);
  if (f.from) add("r.created_at >= ?", f.from);
  if (f.to) add("r.created_at <= ?", f.to);
  if (f.cursor) {
    const [createdAt, id] = decodeCursor(f.cursor);
    where.push("(r.created_at < ? OR (r.created_at = ? AND r.id < ?))");
    args.push(createdAt, createdAt, id);
  }
  const whereSql = (w: string[]) => (w.length ? "WHERE " + w.join(" AND ") : "");
  const order = "ORDER BY r.created_at DESC, r.id DESC";
  const searching = Boolean(f.errorText || f.payloadText);
  const scan = Math.min(Math.max(Math.trunc(f.searchScan ?? RUN_SEARCH_SCAN), 1), RUN_SEARCH_SCAN);
  // A search looks at the newest RUN_SEARCH_SCAN runs the other filters select, no further:
  // the boundary is the last of them (an index walk of that many entries), and the matches are
  // looked for only between the cursor and it.
  // The last run inside the bound, and the one after it: none after it, and no bound is needed.
  const edge = searching ? sqlite.prepare<unknown[], { created_at: string; id: string }>(`SELECT r.created_at, r.id FROM runs r ${whereSql(where)} ${order} LIMIT 2 OFFSET ${scan - 1}`).all(...args) : [];
  const boundary = edge.length === 2 ? edge[0] : undefined;
  const searchWhere = [...where];
  const searchArgs = [...args];
  if (boundary) {
    searchWhere.push("(r.created_at > ? OR (r.created_at = ? AND r.id >= ?))");
    searchArgs.push(boundary.created_at, boundary.created_at, boundary.id);
  }
  if (f.errorText) {
    searchWhere.push("r.error IS NOT NULL AND instr(lower(r.error), lower(?)) > 0");
    searchArgs.push(f.errorText);
  }
  const join = f.payloadText ? "JOIN events e ON e.id = r.event_id" : "";
  if (f.payloadText) {
    searchWhere.push(`instr(lower(substr(e.payload, 1, ${RUN_SEARCH_PAYLOAD_BYTES})), lower(?)) > 0`);
    searchArgs.push(f.payloadText);
  }
  const sql = `SELECT r.* FROM runs r ${join} ${whereSql(searchWhere)} ${order} LIMIT ${limit + 1}`;
  const rows = sqlite.prepare<unknown[], RunRowRaw>(sql).all(...searchArgs);
  const page = rows.slice(0, limit).map(toRun);
  const last = page[page.length - 1];
  if (rows.length > limit && last) return { runs: page, nextCursor: encodeCursor(last.createdAt, last.id) };
  // The page did not fill: either nothing more matches, or the search reached its bound.
  return boundary ? { runs: page, nextCursor: encodeCursor(boundary.created_at, boundary.id), searchStoppedAt: boundary.created_at } : { runs: page, nextCursor: null };
}

/** The reads of runs and their events: one run, pages, tallies, what changed. */
export function createRunsRead(sqlite: Sqlite) {
  const activeOfStmt = sqlite.prepare<[string], { queued: number; running: number }>(
    `SELECT COALESCE(SUM(status = 'queued'), 0) AS queued, COALESCE(SUM(status = 'running'), 0) AS running
     FROM runs WHERE applet_id = ? AND status IN ('queued', 'running')`,
  );
  const byId = sqlite.prepare<[string], RunRowRaw>("SELECT * FROM runs WHERE id = ?");
  const recentEventsOf = sqlite.prepare<{ appletId: string; limit: number }, { id: string; source: string; payload: string; received_at: string }>(
    "SELECT id, source, payload, received_at FROM events WHERE applet_id = @appletId ORDER BY received_at DESC, id DESC LIMIT @limit",
  );
  const eventOf = sqlite.prepare<[string], { id: string; applet_id: string; source: string; dedupe_key: string | null; payload: string; received_at: string }>(
    "SELECT id, applet_id, source, dedupe_key, payload, received_at FROM events WHERE id = ?",
  );
  // The first run of an event (a replay adds later ones): one index seek on the dedupe index.
  const firstOfDedupe = sqlite.prepare<[string, string], { event_id: string; run_id: string | null }>(
    `SELECT e.id AS event_id, (SELECT r.id FROM runs r WHERE r.event_id = e.id ORDER BY r.created_at, r.id LIMIT 1) AS run_id
     FROM events e WHERE e.applet_id = ? AND e.dedupe_key = ?`,
  );
  const statusesOf = sqlite.prepare<[string], { id: string; status: RunStatus }>("SELECT id, status FROM runs WHERE id IN (SELECT value FROM json_each(?))");
  const runsOfEvent = sqlite.prepare<{ eventId: string; limit: number }, { id: string; status: RunStatus; created_at: string }>(
    "SELECT id, status, created_at FROM runs WHERE event_id = @eventId ORDER BY created_at, id LIMIT @limit",
  );
  // Keyset order (updated_at, id), so a page boundary inside one millisecond loses nothing.
  // The finished runs of the window through runs_created_idx; queued and running ones through their
  // partial indexes, however old (a backlog is what a dashboard must see). Named (INDEXED BY): left
  // to itself the planner walked runs_applet_created_idx over every run stored, for the GROUP BY order.
  const tallyByApplet = sqlite.prepare<[string], { applet_id: string; status: string; n: number }>(
    `SELECT applet_id, status, COUNT(*) AS n FROM runs INDEXED BY runs_created_idx WHERE created_at >= ? AND status NOT IN ('queued', 'running') GROUP BY applet_id, status
     UNION ALL SELECT applet_id, 'queued', COUNT(*) FROM runs INDEXED BY runs_queued_idx WHERE status = 'queued' GROUP BY applet_id
     UNION ALL SELECT applet_id, 'running', COUNT(*) FROM runs INDEXED BY runs_running_idx WHERE status = 'running' GROUP BY applet_id`,
  );
  const queueTally = sqlite.prepare<[{ now: string }], { queued: number; oldest_due: string | null }>(
    `SELECT COUNT(*) AS queued, MIN(CASE WHEN COALESCE(next_attempt_at, created_at) <= @now THEN COALESCE(next_attempt_at, created_at) END) AS oldest_due
     FROM runs WHERE status = 'queued'`,
  );
  // Both reads in one transaction, so one snapshot: another process's claim between them would
  // leave its run in neither the running nor the due count.
  const tallyTx = sqlite.transaction((since: string, now: Date): RunTally => {
    const byApplet = tallyByApplet.all(since).map((r) => ({ appletId: r.applet_id, status: r.status, count: r.n }));
    const q = queueTally.get({ now: now.toISOString() })!;
    return { byApplet, queued: q.queued, oldestDueAt: q.oldest_due };
  });
  const changedAfter = sqlite.prepare<{ at: string; id: string; limit: number }, { id: string; applet_id: string; status: string; updated_at: string }>(
    `SELECT id, applet_id, status, updated_at FROM runs
     WHERE updated_at >= @at AND (updated_at > @at OR id > @id)
     ORDER BY updated_at, id LIMIT @limit`,
  );

  return {
    activeOf: (appletId: string): { queued: number; running: number } => {
      const r = activeOfStmt.all(appletId)[0];
      return { queued: Number(r?.queued ?? 0), running: Number(r?.running ?? 0) };
    },
    /** The status of each of these runs (one query for every webhook waiting on its run). */
    statuses(ids: string[]): Map<string, RunStatus> {
      return new Map(statusesOf.all(JSON.stringify(ids)).map((r) => [r.id, r.status]));
    },
    /** The event a dedupe key was first stored with, and its first run (what a redelivery is told). */
    firstOfDedupeKey(appletId: string, dedupeKey: string): { eventId: string; runId: string | null } | null {
      const row = firstOfDedupe.get(appletId, dedupeKey);
      return row ? { eventId: row.event_id, runId: row.run_id } : null;
    },
    get: (id: string): Run | null => {
      const r = byId.get(id);
      return r ? toRun(r) : null;
    },

    event: (eventId: string): StoredEvent | null => {
      const e = eventOf.get(eventId);
      return e
        ? { id: e.id, appletId: e.applet_id, source: e.source, dedupeKey: e.dedupe_key, payload: readJson<Record<string, unknown>>(e.payload, `the stored payload of event ${e.id}`), receivedAt: e.received_at }
        : null;
    },

    /** The editor's sample picker: this applet's latest events, newest first. */
    recentEvents: (appletId: string, limit: number): RecentEvent[] =>
      recentEventsOf.all({ appletId, limit }).map((e) => ({ id: e.id, source: e.source, receivedAt: e.received_at, payload: readJson<Record<string, unknown>>(e.payload, `the stored payload of event ${e.id}`) })),

    /** A page of runs, newest first, by keyset cursor; a search is bounded (RUN_SEARCH_SCAN). */
    list: (f: RunListFilter): RunPage => listRuns(sqlite, f),

    /** The runs of one event, oldest first: the original, then its replays. */
    ofEvent: (eventId: string, limit: number): EventRun[] =>
      runsOfEvent.all({ eventId, limit }).map((r) => ({ id: r.id, status: r.status, createdAt: r.created_at })),

    /**
     * For the SSE stream: runs whose (updated_at, id) comes after (`at`, `id`), oldest change
     * first. `id` "" starts at `at` itself (updated_at >= at).
     */
    changedAfter: (at: string, id: string, limit = 500): RunChange[] => changedAfter.all({ at, id, limit }),

    /** Runs created in the last 24 h and the latest run, per applet (applets list). */
    statsByApplet: (since: string): AppletRunStats[] =>
      sqlite
        .prepare<[{ since: string }], AppletRunStats>(
          `SELECT a.id AS applet_id,
                  (SELECT COUNT(*) FROM runs r WHERE r.applet_id = a.id AND r.created_at >= @since) AS runs_24h,
                  (SELECT COUNT(*) FROM runs r WHERE r.applet_id = a.id AND r.created_at >= @since AND r.status IN ('failed', 'dead')) AS failed_24h,
                  (SELECT CASE WHEN status = 'queued' AND attempt > 1 THEN 'retrying' ELSE status END FROM runs r WHERE r.applet_id = a.id ORDER BY r.created_at DESC LIMIT 1) AS last_status,
                  (SELECT created_at FROM runs r WHERE r.applet_id = a.id ORDER BY r.created_at DESC LIMIT 1) AS last_at
           FROM applets a`,
        )
        .all({ since }),

    /** Runs per applet and status, the queue depth and its oldest due run (GET /metrics). */
    tally: (since: string, now: Date): RunTally => tallyTx(since, now),
  };
}
