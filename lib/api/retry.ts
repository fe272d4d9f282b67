import { Hono } from "hono";
import { z } from "zod";
import { UserError } from "../core/errors";
import { BULK_RETRY_FILTER_MAX, retryFromStep, retryMatching } from "../queue/retry-from";
import type { ApiDeps, ApiEnv } from "./env";
import { jsonBody } from "./validate";

const retryFromBody = z.strictObject({
  step: z.string({ error: "step is required: the id of the step to retry from (as the run page names it)" }).trim().min(1, "step is required: the id of the step to retry from"),
});

const isoTime = (field: string) =>
  z
    .string({ error: `${field} must be a time (ISO 8601, such as 2026-12-01T00:00:00Z)` })
    .refine((v) => !Number.isNaN(Date.parse(v)), { message: `${field} must be a time (ISO 8601, such as 2026-12-01T00:00:00Z)` })
    .transform((v) => new Date(v).toISOString());

const retryMatchingBody = z.strictObject({
  applet_id: z.string({ error: "applet_id must be an applet id" }).min(1).optional(),
  status: z.enum(["failed", "dead"], { error: "status must be failed or dead (left out: both)" }).optional(),
  error_text: z.string({ error: "error_text must be text" }).min(1).max(200).optional(),
  from: isoTime("from").optional(),
  to: isoTime("to").optional(),
  limit: z.number({ error: "limit must be a number" }).int().min(1).max(BULK_RETRY_FILTER_MAX, `limit must be at most ${BULK_RETRY_FILTER_MAX}`).optional(),
  pace_seconds: z.number({ error: "pace_seconds must be a number of seconds" }).min(0).max(3600, "pace_seconds must be at most 3600").optional(),
});

/** Retry from a step (one run) and bulk retry by filter (paced): lib/queue/retry-from.ts. */
export function retryRoutes({ app }: ApiDeps) {
  return new Hono<ApiEnv>()
    .post("/api/runs/:id/retry-from", jsonBody("retry from a step", retryFromBody), async (c) => {
      const r = await retryFromStep(app, c.req.param("id"), c.req.valid("json").step);
      return r ? c.json(r, 202) : c.json({ error: "no such run" }, 404);
    })
    .post("/api/runs/retry-matching", jsonBody("bulk retry", retryMatchingBody), async (c) => {
      const b = c.req.valid("json");
      if (b.from && b.to && b.from > b.to) throw new UserError("bulk retry: from is after to", [{ path: "from", message: "after to" }]);
      const r = await retryMatching(app, { appletId: b.applet_id, status: b.status, errorText: b.error_text, from: b.from, to: b.to }, { limit: b.limit, paceMs: b.pace_seconds === undefined ? undefined : b.pace_seconds * 1000 });
      return c.json(r, 200);
    });
}
