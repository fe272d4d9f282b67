import { Hono } from "hono";
import { z } from "zod";
import type { ApiDeps, ApiEnv } from "../env";
import { queryParams } from "../validate";
import { cancelWaiting, resumeNow, waitingView } from "../../waits/control";

const waitingQuery = z.object({ applet_id: z.string().optional().transform((v) => v || undefined) });

/** Waiting runs: the list with what each waits for, Resume now and Cancel. */
export function waitRoutes({ app }: ApiDeps) {
  const who = (c: { get(k: "user"): { email: string } | null }) => c.get("user")?.email ?? "the run log";
  return new Hono<ApiEnv>()
    .get("/api/waits", queryParams("waits", waitingQuery), async (c) => {
      const now = app.clock.now();
      const waits = await app.store.waits.listWaiting({ appletId: c.req.valid("query").applet_id, limit: 200 });
      return c.json({ waiting: waits.map((w) => waitingView(w, now)) }, 200);
    })
    .post("/api/runs/:id/resume", async (c) => {
      const r = await resumeNow(app, c.req.param("id"), who(c));
      return r.ok ? c.json({ run_id: c.req.param("id"), status: "queued" }, 202) : c.json({ error: r.error }, r.status);
    })
    .post("/api/runs/:id/cancel", async (c) => {
      const r = await cancelWaiting(app, c.req.param("id"), who(c));
      return r.ok ? c.json({ run_id: c.req.param("id"), status: "cancelled" }, 200) : c.json({ error: r.error }, r.status);
    });
}
