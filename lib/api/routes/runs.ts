import { Hono } from "hono";
import { z } from "zod";
import { UserError } from "../../core/errors";
import { LIMITS } from "../../core/limits";
import type { ApiDeps, ApiEnv } from "../env";
import { runDetail, runsPage } from "../queries";
import { streamRuns } from "../stream";
import { queryParams } from "../validate";

// An empty field of the runs page's filter form is no filter. Bounds are ISO date-times.
const optional = z.string().optional().transform((v) => v || undefined);
const runsQuery = z.object({ applet_id: optional, status: optional, reason: optional, from: optional, to: optional, cursor: optional });

/** The run log: a page of runs, one run, retry, replay, and the live stream of run changes. */
export function runRoutes({ app, auth, streamPingMs }: ApiDeps) {
  const notFound = { error: "no such run" } as const;
  return new Hono<ApiEnv>()
    .get("/api/runs", queryParams("runs", runsQuery), async (c) => {
      const q = c.req.valid("query");
      return c.json(await runsPage(app, { appletId: q.applet_id, status: q.status, reason: q.reason, from: q.from, to: q.to, cursor: q.cursor, limit: LIMITS.runsPageSize }), 200);
    })
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
      const id = (await app.store.runs.replay(run.id, app.clock.now()))!;
      app.bus.publish({ type: "run.queued", run_id: id, applet_id: run.appletId, status: "queued" });
      return c.json({ run_id: id }, 202);
    })
    .get("/api/stream", (c) =>
      streamRuns(app.bus, c.req.raw, {
        pingMs: streamPingMs,
        // A stream outlives its request: a logout elsewhere ends it at the next ping.
        stillAllowed: async () => (await auth.sessionOf(c.req.raw)) !== null,
      }),
    );
}
