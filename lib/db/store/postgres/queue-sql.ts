/**
 * The queue's statements on PostgreSQL, as text with positional parameters so the store and the
 * driver bench (bench/pg-drivers.bench.ts) run exactly the same SQL. The rules are SQLite's
 * (lib/db/store/sqlite, formerly lib/db/repos/runs.ts):
 * - oldest due first: among applets with nothing running, the queued run with the smallest
 *   next_attempt_at (then created_at) whose next_attempt_at has come;
 * - one running run per applet: the claim skips applets with a running run, and the unique partial
 *   index runs_running_idx makes it a constraint, so two claims racing on one applet cannot both
 *   commit (the loser gets 23505 and claims again);
 * - every settle is fenced by the claim token;
 * - FOR UPDATE SKIP LOCKED: a claim never waits for another claim's row, it takes the next applet.
 *
 * The applets with queued runs are enumerated one index seek at a time (a loose index scan of
 * runs_queued_idx), as on SQLite, so a backlog of 100,000 runs for one applet costs a claim a few
 * seeks; each applet's head is one more seek and its running check one more.
 *
 * Longer than the store's other files (which stay under 400 lines): it is SQL text, each statement
 * with the comment that says what it guarantees, kept together so the bench runs the same text.
 */

const columns = (t: string) =>
  `${t}id, ${t}applet_id, ${t}event_id, ${t}status, ${t}attempt, ${t}max_attempts, ${t}next_attempt_at, ${t}locked_by, ${t}locked_at, ${t}claim_token, ${t}started_at, ${t}finished_at, ${t}error, ${t}steps::text AS steps, ${t}applet_version, ${t}planned_run_id, ${t}action_index, ${t}due_at, ${t}reason, ${t}created_at, ${t}updated_at`;

/** A run row as the store reads it (steps as text, parsed by the store so a bad value cannot throw in the driver). */
export const RUN_COLUMNS = columns("");

/** $1 event id, $2 applet id, $3 source, $4 dedupe key, $5 payload JSON text, $6 received at. */
export const INSERT_EVENT = `INSERT INTO events (id, applet_id, source, dedupe_key, payload, received_at, created_at, updated_at)
  VALUES ($1, $2, $3, $4, $5::json, $6, $6, $6) ON CONFLICT DO NOTHING`;

/** $1 run id, $2 applet id, $3 event id, $4 max attempts, $5 now (next_attempt_at = created_at). */
export const INSERT_RUN = `INSERT INTO runs (id, applet_id, event_id, status, attempt, max_attempts, next_attempt_at, steps, created_at, updated_at)
  VALUES ($1, $2, $3, 'queued', 1, $4, $5, '[]', $5, $5)`;

/**
 * The event and its run in one statement (one round trip instead of three inside BEGIN/COMMIT):
 * the run is inserted only when the event was (a duplicate dedupe key inserts neither).
 * $1 event id, $2 applet id, $3 source, $4 dedupe key, $5 payload, $6 received at, $7 run id, $8 max attempts.
 */
export const INGEST = `WITH e AS (
    INSERT INTO events (id, applet_id, source, dedupe_key, payload, received_at, created_at, updated_at)
    VALUES ($1, $2, $3, $4, $5::json, $6, $6, $6) ON CONFLICT DO NOTHING RETURNING id
  )
  INSERT INTO runs (id, applet_id, event_id, status, attempt, max_attempts, next_attempt_at, steps, created_at, updated_at)
  SELECT $7, $2, e.id, 'queued', 1, $8, $6, '[]', $6, $6 FROM e
  RETURNING id`;

/**
 * Group commit: a batch of ingests in one statement (arrays, one element per webhook). Duplicates
 * of a dedupe key (stored or within the batch) insert nothing; returns the event id of each row
 * that got its run. A row whose applet is gone fails the statement (23503): the store then redoes
 * the batch row by row.
 */
export const INGEST_MANY = `WITH input AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::int[])
      AS t(event_id, applet_id, source, dedupe_key, payload, received_at, run_id, max_attempts)
  ),
  e AS (
    INSERT INTO events (id, applet_id, source, dedupe_key, payload, received_at, created_at, updated_at)
    SELECT event_id, applet_id, source, dedupe_key, payload::json, received_at, received_at, received_at FROM input
    ON CONFLICT DO NOTHING RETURNING id
  )
  INSERT INTO runs (id, applet_id, event_id, status, attempt, max_attempts, next_attempt_at, steps, created_at, updated_at)
  SELECT i.run_id, i.applet_id, i.event_id, 'queued', 1, i.max_attempts, i.received_at, '[]', i.received_at, i.received_at
  FROM input i JOIN e ON e.id = i.event_id
  RETURNING event_id`;

/**
 * How a claim finds its run, in two passes (the second only when the first finds nothing: an
 * Append under LIMIT 1 never starts its second child otherwise):
 * 1. the oldest due queued runs in due order (runs_due_idx, at most CLAIM_WINDOW of them, walked
 *    one seek at a time so the planner cannot turn the walk into a scan and sort of the whole
 *    queue, which it did with the statistics of a nearly empty one), keeping a run only when its
 *    applet has nothing running and it is its applet's head (one probe of runs_running_idx and
 *    one ORDER BY … LIMIT 1 seek of runs_queued_idx each; written as "no earlier queued run
 *    exists", the planner chose a sequential scan that had to read the whole table to prove it).
 *    The first kept is the claim's answer: any older run belongs to an applet that is running or
 *    has an older head. A few index seeks whatever the number of applets: the common case of a
 *    worker keeping up;
 * 2. when those are all of running applets (one applet's backlog of 100,000 behind its running
 *    run, or more busy applets than the window), the applets with queued runs are enumerated one
 *    index seek at a time (a loose index scan of runs_queued_idx), and each seek lands on that
 *    applet's head: the index is in head order within an applet, so a head costs no seek of its own
 *    (with 1,000 busy applets, 6,764 pages and ~7 ms a claim instead of 7,723 and ~10.5;
 *    bench/RESULTS.md pg-claim).
 * The first pass is consumed as it is walked, in its order (no sort, checks as per-row probes that
 * the planner cannot turn into joins over the whole queue), so it stops at the first run taken.
 * Candidates are locked one at a time in order (FOR UPDATE SKIP LOCKED in a LATERAL per
 * candidate), so a claim locks the one row it takes, and a head another claim is taking is
 * skipped along with the rest of its applet's runs (they are not heads). The passes read rows by
 * primary key: written as `id IN (SELECT …)`, the planner, with statistics from a nearly empty
 * queue, hashed every queued run against the candidates (a scan of the whole backlog).
 *
 * Over parameters named by the caller (the claim alone and FINISH_AND_CLAIM number them
 * differently): `picked` is the run to take, locked, or nothing. FINISH_AND_CLAIM passes
 * `finishing`, the run its finish ends (its applet counts as free), and `extra`, a condition on
 * the pick (only after that finish went in).
 */
/**
 * How far the first pass walks. Its candidates past the first few are runs of applets that are
 * running or not their applet's head: a burst of webhooks for one applet fills the front of the
 * queue with that applet's runs, and then every claim of another applet walked the whole window
 * before the second pass found its run. Measured with 6,000 runs queued 50 per applet in turn and
 * two workers draining (bench/pg-drain.bench.ts, 2026-12-03): FINISH_AND_CLAIM 1.43-1.71 ms and 338-383
 * pages with 64, 1.21-1.31 ms and 252-285 pages with 16 (pg_stat_statements, three runs each).
 */
const CLAIM_WINDOW = 16;
/**
 * "Still queued" for a row already found by its id (the pick's lock, the claim's UPDATE). Written so
 * that it does not match the predicate of the partial indexes on queued runs: a generic plan made
 * while the tables were nearly empty (a fresh install, a worker's first claims on an idle queue)
 * otherwise read the row through runs_due_idx, whose leading columns are not the id, which at
 * 60,000 queued runs is a walk of the whole index in every claim (34 ms instead of 0.6; the plan is
 * kept until the next ANALYZE). status is NOT NULL, so the COALESCE changes no answer.
 */
const stillQueued = (t: string) => `COALESCE(${t}.status, '') = 'queued'`;
/**
 * A run that keeps its lane: running, or waiting at a wait step of an applet with strict order
 * (controls.order; the wait's park sets holds_lane, its resume clears it and queues the run as its
 * lane's head). Written exactly as runs_running_idx's predicate (drizzle-pg/0024), so the probe is
 * the one index seek it was before the option existed.
 */
export const HOLDS_LANE = (t: string) => `(${t}.status = 'running' OR (${t}.status = 'waiting' AND ${t}.holds_lane = 1))`;
/**
 * `finishing`: a condition on `x`, a running run, true unless its finish is in this statement (its
 * applet then counts as free). `extra`: a condition on the pick. `upTo`: how many runs to claim
 * (an expression) instead of one; the second pass then leaves out the heads the first found, since
 * the claim reads past the first pass's.
 */
const claimCtes = (now: string, { finishing = "", extra = "", upTo }: { finishing?: string; extra?: string; upTo?: string } = {}) => {
  // A lane is an applet's (applet_id, lane): '' for every run unless the applet's controls over runs
  // spread them (lib/queue/controls.ts), so by default "one running run per applet", as before.
  // HOLDS_LANE: a waiting run of an applet with strict order holds its lane too, in the same probe
  // of runs_running_idx (whose predicate this is), so an applet without the option pays nothing more.
  const free = (t: string) => `(SELECT 1 FROM runs x WHERE ${HOLDS_LANE("x")} AND x.applet_id = ${t}.applet_id AND x.lane = ${t}.lane${finishing ? ` AND ${finishing}` : ""} LIMIT 1) IS NULL`;
  const due = `r.status = 'queued' AND r.next_attempt_at <= ${now}`;
  return `oldest(id, applet_id, lane, next_attempt_at, created_at, n) AS (
    (SELECT r.id, r.applet_id, r.lane, r.next_attempt_at, r.created_at, 1 FROM runs r
     WHERE ${due} ORDER BY r.next_attempt_at, r.created_at, r.id LIMIT 1)
    UNION ALL
    SELECT s.id, s.applet_id, s.lane, s.next_attempt_at, s.created_at, s.n FROM oldest p
    CROSS JOIN LATERAL (
      SELECT r.id, r.applet_id, r.lane, r.next_attempt_at, r.created_at, p.n + 1 AS n FROM runs r
      WHERE ${due} AND (r.next_attempt_at, r.created_at, r.id) > (p.next_attempt_at, p.created_at, p.id)
      ORDER BY r.next_attempt_at, r.created_at, r.id LIMIT 1
    ) s
    WHERE p.n < ${CLAIM_WINDOW}
  ),
  fast(id) AS (
    SELECT c.id FROM oldest c
    WHERE ${free("c")}
      AND c.id = (SELECT o.id FROM runs o WHERE o.status = 'queued' AND o.applet_id = c.applet_id AND o.lane = c.lane
                  ORDER BY o.next_attempt_at, o.created_at LIMIT 1)
  ),
  queued_applets(applet_id, lane, id, next_attempt_at, created_at) AS (
    (SELECT r.applet_id, r.lane, r.id, r.next_attempt_at, r.created_at FROM runs r
     WHERE r.status = 'queued' AND r.applet_id IS NOT NULL ORDER BY r.applet_id, r.lane, r.next_attempt_at, r.created_at LIMIT 1)
    UNION ALL
    SELECT s.applet_id, s.lane, s.id, s.next_attempt_at, s.created_at FROM queued_applets q
    CROSS JOIN LATERAL (
      SELECT r.applet_id, r.lane, r.id, r.next_attempt_at, r.created_at FROM runs r
      WHERE r.status = 'queued' AND r.applet_id IS NOT NULL AND (r.applet_id, r.lane) > (q.applet_id, q.lane)
      ORDER BY r.applet_id, r.lane, r.next_attempt_at, r.created_at LIMIT 1
    ) s
  ),
  heads(id, next_attempt_at, created_at) AS MATERIALIZED (
    SELECT q.id, q.next_attempt_at, q.created_at FROM queued_applets q
    WHERE q.next_attempt_at <= ${now} AND ${free("q")}
  ),
  picked AS (
    SELECT r.id
    FROM (
      (SELECT id FROM fast)
      UNION ALL
      (SELECT id FROM heads${upTo ? " WHERE id NOT IN (SELECT id FROM fast)" : ""} ORDER BY next_attempt_at, created_at)
    ) h
    CROSS JOIN LATERAL (SELECT r.id FROM runs r WHERE r.id = h.id AND ${stillQueued("r")}${extra} FOR UPDATE OF r SKIP LOCKED) r
    LIMIT ${upTo ?? "1"}
  )`;
};

/**
 * The claim's started_at is never before its applet's last finish (applets.last_fired_at, set by
 * every counted finish): the claim's time is stamped by the worker before its statement waits (for
 * a pooled connection, for the group commit before it), and the run before it may have finished,
 * stamped by another worker, during that wait. One run per lane runs at a time, so the run log
 * then shows the order the runs really had. last_fired_at only moves forward (GREATEST): with
 * several lanes of one applet, a finish stamped earlier may commit later, and must not take it back.
 */
const claimUpdate = (worker: string, now: string, token: string, many = false) => `UPDATE runs SET status = 'running', locked_by = ${worker}, locked_at = ${now}, claim_token = ${token},
         started_at = GREATEST(${now}, (SELECT ap.last_fired_at FROM applets ap WHERE ap.id = runs.applet_id)), finished_at = NULL, updated_at = ${now},
         applet_version = (SELECT MAX(v.version) FROM applet_versions v WHERE v.applet_id = runs.applet_id)
  WHERE runs.id ${many ? "IN (SELECT picked.id FROM picked)" : "= (SELECT picked.id FROM picked)"} AND ${stillQueued("runs")}
  RETURNING ${columns("runs.")}`;

/**
 * What a claim hands the executor besides the run row, read in the claim's own statement instead of
 * three more round trips per run: the run's event (`ev_*`) and applet (`ap_*`), all null when gone
 * (payload and definition as text, parsed by the store), and whether the run is a replay (its
 * created_at is not its event's received_at, or the event has an earlier run). Over the claimed
 * row `claimed`; they read the statement's snapshot, in which the applet is at the version the
 * claim recorded and the claimed run is the only row the `runs o` probe must skip.
 */
const CLAIMED_EXTRAS = `e.id AS ev_id, e.applet_id AS ev_applet_id, e.source AS ev_source, e.dedupe_key AS ev_dedupe_key,
    e.payload::text AS ev_payload, e.received_at AS ev_received_at,
    a.id AS ap_id, a.name AS ap_name, a.definition::text AS ap_definition, a.updated_at AS ap_updated_at,
    (claimed.created_at IS DISTINCT FROM e.received_at OR EXISTS (
      SELECT 1 FROM runs o WHERE o.event_id = claimed.event_id AND o.id <> claimed.id
        AND (o.created_at < claimed.created_at OR (o.created_at = claimed.created_at AND o.id < claimed.id)))) AS replay`;
const CLAIMED_JOINS = "LEFT JOIN events e ON e.id = claimed.event_id LEFT JOIN applets a ON a.id = claimed.applet_id";

/** $1 worker id, $2 now, $3 claim token. Returns the claimed row with its event and applet (CLAIMED_EXTRAS), or nothing. */
export const CLAIM = `WITH RECURSIVE ${claimCtes("$2")},
  claimed AS (
    ${claimUpdate("$1", "$2", "$3")}
  )
  SELECT claimed.*, ${CLAIMED_EXTRAS}
  FROM claimed ${CLAIMED_JOINS}`;

/** What a finish sets, from its status, steps JSON text or null (keep), error and time. */
const finishSet = (status: string, steps: string, error: string, at: string) => `status = ${status}, steps = COALESCE(${steps}::json, runs.steps), error = ${error}, finished_at = ${at}, updated_at = ${at},
         locked_by = NULL, locked_at = NULL, claim_token = NULL, next_attempt_at = NULL`;

/** The fenced finish, with `extra` added to its condition (FINISH_AND_CLAIM's). */
const finishSql = (extra = "") => `UPDATE runs SET ${finishSet("$3", "$4", "$5", "$6")}
  WHERE id = $1 AND claim_token = $2 AND status = 'running'${extra}
  RETURNING applet_id`;

/** $1 run id, $2 claim token, $3 status, $4 steps JSON text or null (keep), $5 error, $6 now. Returns applet_id. */
export const FINISH = finishSql();

/** The count of the finishes `f` on their applets, from a finish's status and time; the failure streak moves with it. */
const countFinished = (status: string, at: string) => `UPDATE applets SET run_count = run_count + 1, last_fired_at = GREATEST(applets.last_fired_at, ${at}),
    failure_streak = CASE WHEN ${status} IN ('failed', 'dead') THEN applets.failure_streak + 1 WHEN ${status} = 'succeeded' THEN 0 ELSE applets.failure_streak END
  FROM f WHERE applets.id = f.applet_id`;
const COUNT_FINISHED = countFinished("$3::text", "$6");
/**
 * The same for several finishes, grouped per applet first: with controls over runs, runs of one
 * applet in different lanes may finish in one statement, and an UPDATE … FROM joining one applet
 * row to several of them would count one and keep an arbitrary one's time.
 */
const COUNT_FINISHED_MANY = `UPDATE applets SET run_count = applets.run_count + g.n, last_fired_at = GREATEST(applets.last_fired_at, g.at),
    failure_streak = CASE WHEN g.failed > 0 THEN applets.failure_streak + g.failed WHEN g.succeeded > 0 THEN 0 ELSE applets.failure_streak END
  FROM (SELECT f.applet_id, COUNT(*)::int AS n, MAX(f.at) AS at, COUNT(*) FILTER (WHERE f.status IN ('failed', 'dead'))::int AS failed,
               COUNT(*) FILTER (WHERE f.status = 'succeeded')::int AS succeeded
        FROM f GROUP BY f.applet_id) g
  WHERE applets.id = g.applet_id`;

/** $1 now, $2 applet id. */
export const BUMP_APPLET = "UPDATE applets SET run_count = run_count + 1, last_fired_at = GREATEST(last_fired_at, $1) WHERE id = $2";

/**
 * FINISH and BUMP_APPLET in one statement: the applet is counted only when the fenced finish
 * changed the run. $1..$6 as FINISH. The failure streak moves with it, and alert_open
 * says whether a success owes a recovery notice.
 */
export const FINISH_AND_COUNT = `WITH f AS (${FINISH})
  ${COUNT_FINISHED}
  RETURNING applets.id, applets.alert_open`;

/**
 * A succeeded or skipped run's finish, its count on the applet and the next claim in one statement:
 * one round trip where the transaction (BEGIN, finish, SAVEPOINT, claim, RELEASE, COMMIT) took six,
 * which on a worker is most of what a run costs besides its action. Its parts share one snapshot,
 * in which the finishing run is still running: the claim counts its applet as free instead, so the
 * next run of the same applet can be the one taken, oldest due first as in the transaction. The
 * pick waits for `f` (EXISTS), so the finish has changed its row before the claimed one becomes
 * running and runs_running_idx sees one running run per applet. Nothing is claimed unless the
 * fenced finish went in; a finish that owes alert state (a success while the applet's alert is
 * open, as the alert policy's `settleNeedsAlertState` says) goes in neither, and the caller takes
 * the transaction.
 * Returns one row: `finished` (0 or 1) and the claimed run's columns with its event and applet
 * (CLAIMED_EXTRAS; all null when nothing was due);
 * `counted`, like every data-modifying CTE, runs whether or not it is read.
 * $1 run id, $2 claim token, $3 status, $4 steps JSON text or null (keep), $5 error, $6 now,
 * $7 worker id, $8 the next claim's token.
 */
export const FINISH_AND_CLAIM = `WITH RECURSIVE f AS (
    ${finishSql(` AND $3::text IN ('succeeded', 'skipped')
      AND NOT ($3::text = 'succeeded' AND EXISTS (SELECT 1 FROM applets a WHERE a.id = runs.applet_id AND a.alert_open = 1))`)}
  ),
  counted AS (${COUNT_FINISHED}),
  ${claimCtes("$6", { finishing: "x.id <> $1", extra: " AND EXISTS (SELECT 1 FROM f)" })},
  claimed AS (
    ${claimUpdate("$7", "$6", "$8")}
  )
  SELECT (SELECT COUNT(*) FROM f)::int AS finished, claimed.*, ${CLAIMED_EXTRAS}
  FROM (SELECT 1) one LEFT JOIN claimed ON true ${CLAIMED_JOINS}`;

/**
 * FINISH_AND_CLAIM for several runs of one worker (group commit, lib/db/store/postgres/settles.ts):
 * the finishes that come while the worker's previous statement is in flight go in one statement,
 * with as many claims as finishes went in. The rules are FINISH_AND_CLAIM's, per run: a finish goes
 * in only when fenced by its token, succeeded or skipped, and not owing alert state (read per run by
 * its applet's key: as EXISTS, the planner hashed every applet with an open alert); the applets of
 * the runs whose finish went in (`f`) count as free, those of the others do not. The claims are
 * applets' heads (one per applet, so no two are of one applet), oldest due first, the second pass
 * leaving out the first pass's. The claimed runs' tokens are made here (gen_random_uuid) and
 * returned as `claim_token`.
 * Returns one row per claimed run (one row of nulls when none), each with `finished`, the ids of the
 * runs whose finish went in.
 * Arrays, one element per run: $1 ids, $2 tokens, $3 statuses, $4 steps JSON text or null (keep),
 * $5 errors, $6 times of the finishes; $7 the claims' time, $8 worker id.
 */
export const FINISH_MANY_AND_CLAIM = `WITH RECURSIVE input AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[]) AS t(id, token, status, steps, error, at)
  ),
  f AS (
    UPDATE runs SET ${finishSet("i.status", "i.steps", "i.error", "i.at")}
    FROM input i
    WHERE runs.id = i.id AND runs.claim_token = i.token AND runs.status = 'running' AND i.status IN ('succeeded', 'skipped')
      AND NOT (i.status = 'succeeded' AND COALESCE((SELECT a.alert_open FROM applets a WHERE a.id = runs.applet_id), 0) = 1)
    RETURNING runs.id, runs.applet_id, i.status, i.at
  ),
  counted AS (${COUNT_FINISHED_MANY}),
  ${claimCtes("$7", { finishing: "x.id NOT IN (SELECT f.id FROM f)", upTo: "(SELECT COUNT(*) FROM f)" })},
  claimed AS (
    ${claimUpdate("$8", "$7", "gen_random_uuid()::text", true)}
  )
  SELECT (SELECT array_agg(f.id) FROM f) AS finished, claimed.*, ${CLAIMED_EXTRAS}
  FROM (SELECT 1) one LEFT JOIN claimed ON true ${CLAIMED_JOINS}`;

/** $1 run id, $2 claim token, $3 steps JSON, $4 now. */
export const SAVE_STEPS = "UPDATE runs SET steps = $3::json, updated_at = $4 WHERE id = $1 AND claim_token = $2 AND status = 'running'";

/** $1 run id, $2 claim token, $3 next attempt at, $4 steps JSON, $5 error, $6 now. */
export const REQUEUE = `UPDATE runs SET status = 'queued', attempt = attempt + 1, next_attempt_at = $3, steps = $4::json, error = $5,
         updated_at = $6, locked_by = NULL, locked_at = NULL, claim_token = NULL
  WHERE id = $1 AND claim_token = $2 AND status = 'running'`;

/** $1 run id, $2 claim token, $3 now. */
export const RELEASE = `UPDATE runs SET status = 'queued', locked_by = NULL, locked_at = NULL, claim_token = NULL, started_at = NULL, updated_at = $3
  WHERE id = $1 AND claim_token = $2 AND status = 'running'`;

/**
 * Statements below that look for queued or running runs without naming an applet say
 * `applet_id IS NOT NULL` (always true: the column is NOT NULL): the partial indexes of queued and
 * running runs carry it (drizzle-pg/0015, so the claim's walk cannot use them), and without it these
 * statements read every run of the history, a sequential scan of `runs` that grows with it.
 */
const ANY_APPLET = "applet_id IS NOT NULL";

/**
 * Running runs nobody will settle (see the SQLite store): their worker's lease expired or it has no
 * row, or it was seen gone ($4), or they are locked past the stuck bound; the caller's own runs by
 * the stuck bound, and those locked before $5 that none of its slots holds ($6: a claim whose
 * answer a cut connection lost). Every worker runs it every 10 s. $1 now, $2 stuck before, $3 self
 * (or null), $4 gone workers, $5 the caller's runs locked before this and not held are orphans (or
 * null), $6 the caller's held run ids.
 */
export const STALE = `SELECT r.id, r.applet_id, r.claim_token, r.locked_by,
    CASE WHEN r.locked_at IS NULL OR r.locked_at < $2 THEN 'stuck'
         WHEN r.locked_by = ANY($4::text[]) THEN 'gone'
         WHEN r.locked_by IS NOT DISTINCT FROM $3::text THEN 'orphan'
         ELSE 'lease' END AS reason
  FROM runs r LEFT JOIN workers w ON w.id = r.locked_by
  WHERE r.status = 'running' AND r.${ANY_APPLET}
    AND (r.locked_at IS NULL OR r.locked_at < $2
         OR r.locked_by = ANY($4::text[])
         OR (r.locked_by IS DISTINCT FROM $3::text AND (w.id IS NULL OR w.lease_until <= $1))
         OR (r.locked_by = $3::text AND r.locked_at < $5::text AND NOT (r.id = ANY($6::text[]))))`;

/** How many runs are queued and the oldest due one's time (health, metrics). $1 now. */
export const QUEUE_TALLY = `SELECT COUNT(*)::int AS queued, MIN(COALESCE(next_attempt_at, created_at)) FILTER (WHERE COALESCE(next_attempt_at, created_at) <= $1) AS oldest_due
  FROM runs WHERE status = 'queued' AND ${ANY_APPLET}`;

/**
 * The runs store's tally (health, metrics): QUEUE_TALLY with the runs per applet and status beside
 * it (created since $2, plus every queued and running one), in one statement so that both parts
 * read one snapshot. Read in two, a run claimed between them was in neither the running nor the
 * due count. $1 now, $2 since.
 */
export const TALLY = `SELECT q.queued, q.oldest_due, (SELECT COALESCE(json_agg(t), '[]'::json) FROM (
    SELECT applet_id, status, COUNT(*)::int AS n FROM runs WHERE created_at >= $2 AND status NOT IN ('queued', 'running') GROUP BY applet_id, status
    UNION ALL SELECT applet_id, 'queued', COUNT(*)::int FROM runs WHERE status = 'queued' AND ${ANY_APPLET} GROUP BY applet_id
    UNION ALL SELECT applet_id, 'running', COUNT(*)::int FROM runs WHERE status = 'running' AND ${ANY_APPLET} GROUP BY applet_id) t) AS by_applet
  FROM (${QUEUE_TALLY}) q`;

/** Workers whose lease ended before $1 and that hold no running run. */
export const PRUNE_WORKERS = `DELETE FROM workers WHERE lease_until < $1
  AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.status = 'running' AND r.${ANY_APPLET} AND r.locked_by = workers.id)`;

/** Back to queued, same attempt and place; fenced by the token seen. $1 run id, $2 token seen, $3 now. */
export const RECOVER = `UPDATE runs SET status = 'queued', locked_by = NULL, locked_at = NULL, claim_token = NULL,
         next_attempt_at = COALESCE(next_attempt_at, created_at), updated_at = $3
  WHERE id = $1 AND status = 'running' AND claim_token IS NOT DISTINCT FROM $2::text`;

/**
 * Rows of `runs` changed other than in place (a claim, a finish: status is in the partial indexes'
 * predicates, so neither update is HOT) or deleted, since the statistics began: what leaves dead
 * entries in the queue's indexes. Read from the statistics, so it lags by up to a second.
 */
export const RUNS_CHANGES = "SELECT (n_tup_upd - n_tup_hot_upd + n_tup_del)::text AS n FROM pg_stat_user_tables WHERE relid = 'runs'::regclass";

/**
 * Removes dead row versions and, with INDEX_CLEANUP ON, their index entries even when few heap
 * pages hold them (the default skips the indexes below 2 % of pages: a long history's vacuum left
 * every claimed run's entry in runs_due_idx). SKIP_LOCKED: another vacuum of `runs` (autovacuum)
 * is in progress, nothing to wait for.
 */
export const VACUUM_QUEUE = "VACUUM (INDEX_CLEANUP ON, SKIP_LOCKED) runs";

/**
 * A web process with a live view open says so until now + $2 seconds (PostgreSQL's clock): run
 * changes are announced only while a row here has not expired (drizzle-pg/0016). Rows left by
 * processes that stopped are removed on the way, an hour after they expired. $1 watcher id.
 */
export const WATCH_RUNS = `WITH gone AS (DELETE FROM live_watchers WHERE until < now() - interval '1 hour' AND id <> $1)
  INSERT INTO live_watchers (id, until) VALUES ($1, now() + make_interval(secs => $2::float8))
  ON CONFLICT (id) DO UPDATE SET until = EXCLUDED.until`;

/**
 * A worker with an idle slot says so until now + $2 seconds (PostgreSQL's clock): runs that become
 * claimable are announced only while a row here has not expired (drizzle-pg/0017). $1 worker id.
 */
export const WATCH_QUEUE = `INSERT INTO queue_watchers (id, until) VALUES ($1, now() + make_interval(secs => $2::float8))
  ON CONFLICT (id) DO UPDATE SET until = EXCLUDED.until`;

/** A worker whose slots are all busy again, or that stops; rows of workers that died go on the way. $1 worker id. */
export const UNWATCH_QUEUE = "DELETE FROM queue_watchers WHERE id = $1 OR until < now() - interval '1 hour'";

/** The transactions in progress now, as a snapshot's text (its xip list). */
export const IN_PROGRESS = "SELECT pg_current_snapshot()::text AS snapshot";

/** Whether every transaction in progress in snapshot $1 (IN_PROGRESS) has ended. */
export const ENDED = "SELECT NOT EXISTS (SELECT 1 FROM pg_snapshot_xip($1::pg_snapshot) x WHERE pg_xact_status(x) = 'in progress') AS ended";

/** Runs were inserted or changed status, while a live view is open (no payload: listeners read `changedAfter`; drizzle-pg/0013, 0016). */
export const RUNS_CHANNEL = "whenthen_runs";
/** A run became claimable, while a worker has an idle slot (no payload; drizzle-pg/0013, 0017). */
export const QUEUED_CHANNEL = "whenthen_queued";
