import { Hono } from "hono";
import { z } from "zod";
import { actionRegistry } from "../actions";
import { UserError, errorMessage } from "../core/errors";
import { checkDefinition } from "../definition";
import { dryRunApplet, type DryRunInput, type DryRunResult } from "../executor/dry-run";
import { triggerRegistry } from "../triggers";
import { pollContext } from "../triggers/context";
import type { App } from "../app";
import type { Sandbox } from "../sandbox";
import type { ApiDeps, ApiEnv } from "./env";
import { jsonBody } from "./validate";

/**
 * POST /api/applets/:id/dry-run: "Test without sending". The event is one of: `event_id` (one the
 * applet received), `payload` (any JSON object), `sample: true` (the trigger's sample), `fetch:
 * true` (the trigger's "Fetch now", its first item); none of them: the latest received event, or
 * the sample when there is none. `definition` tries an unsaved draft (the editor) instead of the
 * saved applet. Nothing is stored and nothing is sent (lib/executor/dry-run.ts).
 */
export const dryRunBody = z
  .strictObject({
    event_id: z.string({ error: "event_id must be the id of an event this applet received" }).min(1).optional(),
    payload: z.record(z.string(), z.unknown(), { error: "payload must be a JSON object" }).optional(),
    sample: z.literal(true, { error: "sample must be true (use the trigger's sample)" }).optional(),
    fetch: z.literal(true, { error: "fetch must be true (fetch the trigger now and use its first item)" }).optional(),
    definition: z.unknown().optional(),
  })
  .refine((b) => [b.event_id, b.payload, b.sample, b.fetch].filter((v) => v !== undefined).length <= 1, {
    message: "name at most one of event_id, payload, sample and fetch",
    path: ["event_id"],
  });
export type DryRunBody = z.infer<typeof dryRunBody>;

export async function dryRunOf(app: App, sandbox: Sandbox | undefined, appletId: string, body: DryRunBody): Promise<DryRunResult | null> {
  const applet = await app.store.applets.get(appletId);
  if (!applet) return null;
  const definition = body.definition ?? applet.definition;
  const checked = checkDefinition(definition);
  if (!checked.ok) throw new UserError("dry run: the applet definition is invalid", checked.problems.map((p) => ({ path: `definition.${p.path}`, message: p.message })));
  const trigger = triggerRegistry.get(checked.definition.trigger.type);
  const event = await chooseEvent(app, appletId, body, trigger, checked.definition.trigger.config);
  return dryRunApplet({ app, actions: actionRegistry, sandbox }, { applet: { id: applet.id, name: applet.name, definition }, ...event });
}

async function chooseEvent(
  app: App,
  appletId: string,
  body: DryRunBody,
  trigger: ReturnType<typeof triggerRegistry.get>,
  config: Record<string, unknown>,
): Promise<Pick<DryRunInput, "payload" | "event">> {
  if (body.payload) return { payload: body.payload, event: { id: null, source: "payload", received_at: null } };
  if (body.event_id) {
    const e = await app.store.runs.event(body.event_id);
    if (!e || e.appletId !== appletId) throw new UserError(`dry run: this applet has no event ${body.event_id}`, [{ path: "event_id", message: "no such event of this applet" }]);
    return { payload: e.payload, event: { id: e.id, source: e.source, received_at: e.receivedAt } };
  }
  const sample = (): Pick<DryRunInput, "payload" | "event"> => ({ payload: trigger?.sample ?? {}, event: { id: null, source: "sample", received_at: null } });
  if (body.sample) return sample();
  if (body.fetch) {
    if (!trigger?.preview) throw new UserError(`dry run: a ${trigger?.type ?? "this"} trigger cannot be fetched now`, [{ path: "fetch", message: "use event_id, payload or sample" }]);
    const parsed = trigger.configSchema.safeParse(config);
    if (!parsed.success) throw new UserError("dry run: the trigger's config is invalid", parsed.error.issues.map((i) => ({ path: `definition.trigger.config.${i.path.join(".")}`, message: i.message })));
    let result: unknown;
    try {
      result = await trigger.preview(parsed.data, pollContext(app));
    } catch (err) {
      throw new UserError(`dry run: fetching the trigger failed: ${errorMessage(err)}`, [{ path: "fetch", message: "the fetch failed" }]);
    }
    const items = (result as { items?: unknown } | null)?.items;
    const first = Array.isArray(items) ? items.find((i): i is Record<string, unknown> => Boolean(i) && typeof i === "object") : undefined;
    if (!first) throw new UserError("dry run: the fetch found nothing to run on", [{ path: "fetch", message: "no item" }]);
    const { key: _key, ...payload } = first;
    return { payload, event: { id: null, source: "fetch", received_at: null } };
  }
  const [latest] = await app.store.runs.recentEvents(appletId, 1);
  if (latest) return { payload: latest.payload, event: { id: latest.id, source: latest.source, received_at: latest.receivedAt } };
  return sample();
}

export function dryRunRoutes({ app, sandbox }: ApiDeps) {
  return new Hono<ApiEnv>().post("/api/applets/:id/dry-run", jsonBody("dry run", dryRunBody), async (c) => {
    const result = await dryRunOf(app, sandbox, c.req.param("id"), c.req.valid("json"));
    return result ? c.json(result, 200) : c.json({ error: "no such applet" }, 404);
  });
}
