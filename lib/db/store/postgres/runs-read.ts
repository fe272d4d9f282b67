import { decodeCursor, encodeCursor, toRun, type RunRowRaw } from "../run-row";
import type { RunStatus } from "../types/runs";
import { RUN_SEARCH_PAYLOAD_BYTES, RUN_SEARCH_SCAN, type EventRun, type RunChange, type RunListFilter, type RunPage, type RunsStore } from "../types";
import { query, queryDynamic, type Queryable } from "./pool";
import * as Q from "./queue-sql";

/** The shared row, with the claim token the PostgreSQL queue reads back. */
export interface RunRaw extends RunRowRaw {
  claim_token: string | null;
}

/** The runs page of the list (`RunsStore#list`): filters, a cursor, and a search bounded to the newest RUN_SEARCH_SCAN runs. */
export async function listRuns(q: Queryable, f: RunListFilter): Promise<RunPage> {
  const limit = Math.min(Math.max(f.limit ?? 50, 1), 200);
  const where: string[] = [];
  const args: unknown[] = [];
  const add = (clause: (n: number) => string, value: unknown) => {
    args.push(value);
    where.push(clause(args.length));
  };
  if (f.appletId) add((n) => `r.applet_id = $${n}`, f.appletId);
  // `retrying` is a queued run after a failed attempt, and `queued` the ones not yet tried (lib/ui/run-status).
  if (f.status === "retrying") where.push("r.status = 'queued' AND r.attempt > 1");
  else if (f.status === "queued") where.push("r.status = 'queued' AND r.attempt = 1");
  else if (f.status) add((n) => `r.status = $${n}`, f.status);
  if (f.reason) add((n) => `r.reason = $${n}`, f.reason);
  if (f.from) add((n) => `r.created_at >= $${n}`, f.from);
  if (f.to) add((n) => `r.created_at <= $${n}`, f.to);
  if (f.cursor) {
    const [createdAt, id] = decodeCursor(f.cursor);
    args.push(createdAt, id);
    where.push(`(r.created_at < $${args.length - 1} OR (r.created_at = $${args.length - 1} AND r.id < $${args.length}))`);
  }
  const whereSql = (w: string[]) => (w.length ? "WHERE " + w.join(" AND ") : "");
  const order = "ORDER BY r.created_at DESC, r.id DESC";
  const searching = Boolean(f.errorText || f.payloadText);
  const scan = Math.min(Math.max(Math.trunc(f.searchScan ?? RUN_SEARCH_SCAN), 1), RUN_SEARCH_SCAN);
  // A search looks at the newest RUN_SEARCH_SCAN runs the other filters select, no further
  // (as on SQLite): the boundary is the last of them, and matches are looked for above it.
  // The last run inside the bound, and the one after it: none after it, and no bound is needed.
  const edge = searching ? (await queryDynamic<{ created_at: string; id: string }>(q, `SELECT r.created_at, r.id FROM runs r ${whereSql(where)} ${order} LIMIT 2 OFFSET ${scan - 1}`, args)).rows : [];
  const boundary = edge.length === 2 ? edge[0] : undefined;
  const searchWhere = [...where];
  const searchArgs = [...args];
  const push = (clause: (n: number) => string, value: unknown) => {
    searchArgs.push(value);
    searchWhere.push(clause(searchArgs.length));
  };
  if (boundary) {
    searchArgs.push(boundary.created_at, boundary.id);
    searchWhere.push(`(r.created_at > $${searchArgs.length - 1} OR (r.created_at = $${searchArgs.length - 1} AND r.id >= $${searchArgs.length}))`);
  }
  if (f.errorText) push((n) => `r.error IS NOT NULL AND strpos(lower(r.error), lower($${n})) > 0`, f.errorText);
  const join = f.payloadText ? "JOIN events e ON e.id = r.event_id" : "";
  if (f.payloadText) push((n) => `strpos(lower(left(e.payload::text, ${RUN_SEARCH_PAYLOAD_BYTES})), lower($${n})) > 0`, f.payloadText);
  const runColumns = Q.RUN_COLUMNS.split(", ").map((c) => `r.${c}`).join(", ");
  const sql = `SELECT ${runColumns} FROM runs r ${join} ${whereSql(searchWhere)} ${order} LIMIT ${limit + 1}`;
  const rows = (await queryDynamic<RunRaw>(q, sql, searchArgs)).rows;
  const page = rows.slice(0, limit).map(toRun);
  const last = page[page.length - 1];
  if (rows.length > limit && last) return { runs: page, nextCursor: encodeCursor(last.createdAt, last.id) };
  return boundary ? { runs: page, nextCursor: encodeCursor(boundary.created_at, boundary.id), searchStoppedAt: boundary.created_at } : { runs: page, nextCursor: null };
}

/** The reads of runs and their events: one run, pages, tallies, what changed. */
export function runsRead(q: Queryable): Pick<RunsStore, "activeOf" | "firstOfDedupeKey" | "statuses" | "get" | "event" | "recentEvents" | "list" | "ofEvent" | "changedAfter" | "statsByApplet" | "tally"> {
  return {
    activeOf: async (appletId) => {
      const r = (
        await query<{ queued: string; running: string }>(
          q,
          "SELECT COUNT(*) FILTER (WHERE status = 'queued') AS queued, COUNT(*) FILTER (WHERE status = 'running') AS running FROM runs WHERE applet_id = $1 AND status IN ('queued', 'running')",
          [appletId],
        )
      ).rows[0];
      return { queued: Number(r?.queued ?? 0), running: Number(r?.running ?? 0) };
    },

    firstOfDedupeKey: async (appletId, dedupeKey) => {
      const row = (
        await query<{ event_id: string; run_id: string | null }>(
          q,
          `SELECT e.id AS event_id, (SELECT r.id FROM runs r WHERE r.event_id = e.id ORDER BY r.created_at, r.id LIMIT 1) AS run_id
           FROM events e WHERE e.applet_id = $1 AND e.dedupe_key = $2`,
          [appletId, dedupeKey],
        )
      ).rows[0];
      return row ? { eventId: row.event_id, runId: row.run_id } : null;
    },

    statuses: async (ids) =>
      new Map((await query<{ id: string; status: RunStatus }>(q, "SELECT id, status FROM runs WHERE id = ANY($1::text[])", [ids])).rows.map((r) => [r.id, r.status])),

    get: async (id) => {
      const r = (await query<RunRaw>(q, `SELECT ${Q.RUN_COLUMNS} FROM runs WHERE id = $1`, [id])).rows[0];
      return r ? toRun(r) : null;
    },

    event: async (eventId) => {
      const e = (
        await query<{ id: string; applet_id: string; source: string; dedupe_key: string | null; payload: Record<string, unknown>; received_at: string }>(
          q,
          "SELECT id, applet_id, source, dedupe_key, payload, received_at FROM events WHERE id = $1",
          [eventId],
        )
      ).rows[0];
      return e ? { id: e.id, appletId: e.applet_id, source: e.source, dedupeKey: e.dedupe_key, payload: e.payload, receivedAt: e.received_at } : null;
    },

    recentEvents: async (appletId, limit) =>
      (
        await query<{ id: string; source: string; payload: Record<string, unknown>; received_at: string }>(
          q,
          "SELECT id, source, payload, received_at FROM events WHERE applet_id = $1 ORDER BY received_at DESC, id DESC LIMIT $2",
          [appletId, limit],
        )
      ).rows.map((e) => ({ id: e.id, source: e.source, receivedAt: e.received_at, payload: e.payload })),

    list: (f) => listRuns(q, f),

    ofEvent: async (eventId, limit) =>
      (await query<{ id: string; status: RunStatus; created_at: string }>(q, "SELECT id, status, created_at FROM runs WHERE event_id = $1 ORDER BY created_at, id LIMIT $2", [eventId, limit])).rows.map(
        (r): EventRun => ({ id: r.id, status: r.status, createdAt: r.created_at }),
      ),

    changedAfter: async (at, id, limit = 500) =>
      (
        await query<RunChange>(
          q,
          `SELECT id, applet_id, status, updated_at FROM runs
           WHERE updated_at >= $1 AND (updated_at > $1 OR id > $2)
           ORDER BY updated_at, id LIMIT $3`,
          [at, id, limit],
        )
      ).rows,

    statsByApplet: async (since) =>
      (
        await query<{ applet_id: string; runs_24h: number; failed_24h: number; last_status: string | null; last_at: string | null }>(
          q,
          `SELECT a.id AS applet_id,
                  (SELECT COUNT(*)::int FROM runs r WHERE r.applet_id = a.id AND r.created_at >= $1) AS runs_24h,
                  (SELECT COUNT(*)::int FROM runs r WHERE r.applet_id = a.id AND r.created_at >= $1 AND r.status IN ('failed', 'dead')) AS failed_24h,
                  CASE WHEN l.status = 'queued' AND l.attempt > 1 THEN 'retrying' ELSE l.status END AS last_status, l.created_at AS last_at
           FROM applets a
           LEFT JOIN LATERAL (SELECT status, attempt, created_at FROM runs r WHERE r.applet_id = a.id ORDER BY r.created_at DESC LIMIT 1) l ON true`,
          [since],
        )
      ).rows,

    tally: async (since, now) => {
      const t = (
        await query<{ queued: number; oldest_due: string | null; by_applet: { applet_id: string; status: string; n: number }[] }>(q, Q.TALLY, [now.toISOString(), since])
      ).rows[0]!;
      const byApplet = t.by_applet.map((r) => ({ appletId: r.applet_id, status: r.status, count: r.n }));
      return { byApplet, queued: t.queued, oldestDueAt: t.oldest_due };
    },
  };
}
