import { Hono } from "hono";
import { z } from "zod";
import { UserError } from "../../core/errors";
import { LIMITS } from "../../core/limits";
import type { ApiDeps, ApiEnv } from "../env";
import { runDetail, runsPage } from "../queries";
import { streamRuns } from "../stream";
import { jsonBody, queryParams } from "../validate";
import { BULK_RETRY_MAX, retryRuns } from "../../queue/bulk-retry";
import { replayRun } from "../../queue/replay";

// An empty field of the runs page's filter form is no filter. Bounds are ISO date-times.
const optional = z.string().optional().transform((v) => v || undefined);
const searchText = z
  .string()
  .max(200, { error: "search text must be at most 200 characters" })
  .optional()
  .transform((v) => v?.trim() || undefined);
// `error`: text in the run's error; `payload`: text in its event's payload (both bounded, see RunListFilter).
const runsQuery = z.object({ applet_id: optional, status: optional, reason: optional, from: optional, to: optional, cursor: optional, error: searchText, payload: searchText });
const bulkRetryBody = z.strictObject({
  run_ids: z
    .array(z.string({ error: "run_ids must hold run ids (text)" }), { error: "run_ids is required: the ids of the runs to retry" })
    .min(1, { error: "run_ids is empty: select at least one run" })
    .max(BULK_RETRY_MAX, { error: `run_ids: at most ${BULK_RETRY_MAX} runs at a time` }),
});

/** The run log: a page of runs, one run, retry, replay, and the live stream of run changes. */
export function runRoutes({ app, auth, streamPingMs }: ApiDeps) {
  const notFound = { error: "no such run" } as const;
  return new Hono<ApiEnv>()
    .get("/api/runs", queryParams("runs", runsQuery), async (c) => {
      const q = c.req.valid("query");
      return c.json(
        await runsPage(app, { appletId: q.applet_id, status: q.status, reason: q.reason, from: q.from, to: q.to, cursor: q.cursor, errorText: q.error, payloadText: q.payload, limit: LIMITS.runsPageSize }),
        200,
      );
    })
    // Bulk retry: the Retry button for many runs, one store transaction per batch (lib/queue/bulk-retry).
    .post("/api/runs/bulk-retry", jsonBody("bulk retry", bulkRetryBody), async (c) => c.json(await retryRuns(app, c.req.valid("json").run_ids), 200))
    .get("/api/runs/:id", async (c) => {
      const detail = await runDetail(app, c.req.param("id"));
      return detail ? c.json(detail, 200) : c.json(notFound, 404);
    })
    .post("/api/runs/:id/retry", async (c) => {
      const run = await app.store.runs.get(c.req.param("id"));
      if (!run) return c.json(notFound, 404);
      if (!(await app.store.runs.retry(run.id, app.clock.now()))) {
        throw new UserError(`retry: only failed or dead runs can be retried; this one is ${run.status}`, [{ path: "status", message: run.status }]);
      }
      app.bus.publish({ type: "run.updated", run_id: run.id, applet_id: run.appletId, status: "queued" });
      return c.json({ run_id: run.id, attempt: run.attempt + 1 }, 202);
    })
    .post("/api/runs/:id/replay", async (c) => {
      const run = await app.store.runs.get(c.req.param("id"));
      if (!run) return c.json(notFound, 404);
      const id = (await replayRun(app, run.id))!;
      app.bus.publish({ type: "run.queued", run_id: id, applet_id: run.appletId, status: "queued" });
      return c.json({ run_id: id }, 202);
    })
    .get("/api/stream", (c) =>
      streamRuns(app.bus, c.req.raw, {
        pingMs: streamPingMs,
        nowMs: () => app.clock.now().getTime(),
        // A stream outlives its request: a logout elsewhere ends it at the next ping.
        stillAllowed: async () => (await auth.sessionOf(c.req.raw)) !== null,
      }),
    );
}
