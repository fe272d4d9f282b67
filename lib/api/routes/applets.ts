import { Hono } from "hono";
import { z } from "zod";
import { actionRegistry } from "../../actions";
import { UserError, errorMessage } from "../../core/errors";
import { inUserWords } from "../../core/zod-words";
import { localIso } from "../../core/local-iso";
import { checkDefinition, looseActions, storedDefinition, timezoneOf } from "../../definition";
import { renderConfig } from "../../template";
import { previewWalk } from "../../executor/preview-walk";
import { triggerRegistry } from "../../triggers";
import { pollContext } from "../../triggers/context";
import { credentialViewOf, type ApiDeps, type ApiEnv } from "../env";
import { authorOf } from "../../applets/versions";
import { appletDetail, appletDetailOf, appletList, appletVersion, appletVersions, plannedOf } from "../queries";
import { planTimed } from "../../timed/plan";
import { recentEvents } from "../samples";
import { jsonBody, pathParams, queryParams } from "../validate";
import { saveWarnings } from "../warnings";
import { LISTEN_MS } from "../../webhooks/listen";
import { LEDGER_OUTCOMES, type LedgerOutcome } from "../../db/store/types";
import { EXPECT_MAX_HOURS, EXPECT_MIN_HOURS } from "../../fires/quiet";
import { activityView, ledgerPage } from "../../fires/view";
import { controlsView, withControls } from "../../applets/controls";
import { controlsSchema } from "../../definition/controls";

const record = (field: string) => z.record(z.string(), z.unknown(), { error: `${field} must be a JSON object` });

/**
 * An applet's name and definition. Only the types are checked here: what a definition means
 * (its plug-ins' configs, URLs, the name's length) is lib/applets/service.ts's, which reports every
 * problem at once with its path.
 */
const appletBody = z.strictObject({
  name: z.string({ error: "name must be text" }).optional(),
  enabled: z.boolean({ error: "enabled must be true or false" }).optional(),
  definition: z.unknown().optional(),
  tags: z.array(z.string({ error: "each tag must be text" }), { error: "tags must be a list of words" }).optional(),
});

const previewBody = z.strictObject({
  definition: z.unknown().optional(),
  sample: record("sample").optional(),
  vars: record("vars").optional(),
  ai: record("ai").optional(),
});

const timingPreviewBody = z.strictObject({
  definition: z.unknown(),
  sample: record("sample").optional(),
});

const ledgerQuery = z.object({
  outcome: z
    .string()
    .optional()
    .transform((v) => v || undefined)
    .refine((v) => v === undefined || (LEDGER_OUTCOMES as readonly string[]).includes(v), { message: `outcome must be one of ${LEDGER_OUTCOMES.join(", ")}` }),
  before: z.string().max(500).optional(),
  limit: z
    .string()
    .optional()
    .refine((v) => v === undefined || v === "" || (/^\d+$/.test(v) && Number(v) >= 1 && Number(v) <= 200), { message: "limit must be a whole number from 1 to 200" })
    .transform((v) => (v ? Number(v) : 50)),
});

/** Expected activity: at least one event every N hours (null: none of its own). */
const activityBody = z.strictObject({
  expect_every_hours: z
    .number({ error: "expect_every_hours must be a number of hours, or null" })
    .min(EXPECT_MIN_HOURS, `expect_every_hours must be at least ${EXPECT_MIN_HOURS}`)
    .max(EXPECT_MAX_HOURS, `expect_every_hours must be at most ${EXPECT_MAX_HOURS} (31 days)`)
    .nullable(),
});

const PLANNED_STATUSES = ["pending", "running", "done", "failed", "cancelled", "skipped"] as const;
const plannedQuery = z.object({
  status: z
    .string()
    .optional()
    .transform((v) => v || undefined)
    .refine((v) => v === undefined || (PLANNED_STATUSES as readonly string[]).includes(v), { message: `status must be one of ${PLANNED_STATUSES.join(", ")}` }),
  limit: z
    .string()
    .optional()
    .refine((v) => v === undefined || v === "" || (/^\d+$/.test(v) && Number(v) >= 1 && Number(v) <= 200), { message: "limit must be a whole number from 1 to 200" })
    .transform((v) => (v ? Number(v) : 50)),
});

const filterTestBody = z.strictObject({
  code: z.string({ error: "code is required: the filter's JavaScript as text" }),
  sample: record("sample").optional(),
});

const fetchBody = z.strictObject({
  type: z.string({ error: "type is required: the trigger type to fetch or test (rss, poll, imap, mqtt)" }),
  config: record("config").optional(),
});

const exampleBody = z.strictObject({ key: z.string({ error: "key is required: which example (see the applets page)" }) });

/** `:id` and a version number `:n` (1, 2, 3 …). */
const versionParams = z.object({
  id: z.string(),
  n: z
    .string()
    .regex(/^[1-9][0-9]{0,8}$/, { error: "n must be a version number: 1, 2, 3 …" })
    .transform(Number),
});

/**
 * The editor's checks of a draft before it is saved: the preview of its rendered steps, the timing
 * preview, the filter test in the sandbox, and fetching a polled trigger's items now.
 */
function editorCheckRoutes({ app, sandbox }: ApiDeps) {
  return new Hono<ApiEnv>()
    .post("/api/applets/preview", jsonBody("preview", previewBody), async (c) => {
      const body = c.req.valid("json");
      const checked = checkDefinition(body.definition);
      // A definition with problems still previews what it can: the editor shows both.
      const list = looseActions(checked.ok ? checked.definition : body.definition);
      const known = new Set((await app.secrets.list()).map((s) => s.name));
      const timezone = checked.ok ? timezoneOf(checked.definition) : "UTC";
      const now = app.clock.now();
      const ctx = {
        trigger: body.sample ?? {},
        ai: body.ai ?? {},
        vars: body.vars ?? {},
        applet: { id: "preview", name: "Preview" },
        run: { id: "preview", attempt: 1 },
        event: { id: "preview", source: "manual", received_at: now.toISOString() },
        now: now.toISOString(),
        // What a run renders too (lib/executor/run.ts): a preview that left it out marked it unresolved.
        now_local: localIso(now, timezone),
        // The browser never sees a secret value, only that it would resolve.
        secrets: (name: string) => (known.has(name) ? `[secret ${name}]` : undefined),
      };
      // Every action step in written order (nested ones too); `index` counts them as the editor does.
      const actions = list.map((a, index) => {
        const r = renderConfig(a.config, ctx, { timezone, typedKeys: actionRegistry.get(a.type)?.typedConfig });
        return {
          index,
          id: a.id,
          path: a.path,
          type: a.type,
          rendered: r.rendered,
          warnings: r.warnings,
          unresolved: r.warnings.filter((w) => w.startsWith("unresolved: ")).map((w) => w.slice("unresolved: ".length)),
        };
      });
      // A step list's walk: which way each if and paths would go, each for_each's first items.
      const steps = checked.ok
        ? previewWalk(checked.definition, ctx, (step, itemCtx) => {
            const r = renderConfig(step.config, itemCtx, { timezone, typedKeys: actionRegistry.get(step.type)?.typedConfig });
            return { rendered: r.rendered, unresolved: r.warnings.filter((w) => w.startsWith("unresolved: ")).map((w) => w.slice("unresolved: ".length)) };
          }, timezone)
        : [];
      return c.json({ actions, steps, problems: checked.ok ? [] : checked.problems }, 200);
    })
    // Timed actions: what the library's planner would do with this definition and sample,
    // now. Pure: nothing is stored.
    .post("/api/applets/timing-preview", jsonBody("timing preview", timingPreviewBody), async (c) => {
      const body = c.req.valid("json");
      const checked = checkDefinition(body.definition);
      if (!checked.ok) return c.json({ items: [], warnings: [], problems: checked.problems }, 200);
      const now = app.clock.now().getTime();
      const plan = planTimed({ appletId: "preview", definition: checked.definition, payload: body.sample ?? {}, eventId: "preview", receivedAt: now, maxAttempts: 1 });
      const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
      const items = plan.runs.map((r) => ({
        actionIndex: r.actionIndex,
        dueAt: iso(r.dueAt),
        originalDueAt: iso(r.originalDueAt),
        timezone: r.timezone,
        status: r.status,
        reason: r.reason,
        explanation: r.explanation,
      }));
      return c.json({ items, warnings: plan.warnings, problems: [] as { path: string; message: string }[] }, 200);
    })
    .post("/api/applets/filter-test", jsonBody("filter test", filterTestBody), async (c) => {
      const body = c.req.valid("json");
      if (!sandbox) return c.json({ error: "the sandbox is not available in this process" }, 503);
      const r = await sandbox.run({ code: body.code, trigger: body.sample ?? {}, applet: { id: "preview", name: "Preview" } });
      return c.json({ vars: r.vars, logs: r.logs, skipped: r.skipped, reason: r.reason ?? null, error: r.error ?? null, duration_ms: r.duration_ms }, 200);
    })
    // "Fetch now" (a feed, a JSON poll) and "Test connection" (a mailbox, a broker): the trigger's
    // preview with the config as typed, nothing saved.
    .post("/api/triggers/fetch", jsonBody("fetch", fetchBody), async (c) => {
      const body = c.req.valid("json");
      const plugin = triggerRegistry.get(body.type);
      if (!plugin?.preview) {
        const able = [...triggerRegistry.values()].filter((t) => t.preview !== undefined).map((t) => t.type);
        throw new UserError(`fetch: trigger type "${body.type}" cannot be fetched or tested`, [{ path: "type", message: `expected one of ${able.join(", ")}` }]);
      }
      const config = body.config ?? {};
      const read = plugin.previewReads ? Object.fromEntries(plugin.previewReads.filter((k) => Object.hasOwn(config, k)).map((k) => [k, config[k]])) : config;
      const parsed = plugin.configSchema.safeParse(read, { error: inUserWords });
      if (!parsed.success) {
        throw new UserError("fetch: invalid config", parsed.error.issues.map((i) => ({ path: `config.${i.path.join(".")}`, message: i.message })));
      }
      // The answer goes to the browser: no secret the fetch rendered may be in it.
      const ctx = pollContext(app);
      try {
        const result: unknown = await plugin.preview(parsed.data, ctx);
        return c.json({ ok: true as const, result: ctx.redact<unknown>(result) }, 200);
      } catch (err) {
        return c.json({ ok: false as const, error: ctx.redact(errorMessage(err)) }, 200);
      }
    });
}

/** Applets: list, create, read, update, delete, enable/disable, a test event, and the editor's previews. */
export function appletRoutes(deps: ApiDeps) {
  const { app, applets } = deps;
  const notFound = { error: "no such applet" } as const;
  return new Hono<ApiEnv>()
    .route("/", editorCheckRoutes(deps))
    .get("/api/applets", async (c) => c.json({ applets: await appletList(app) }))
    .post("/api/applets", jsonBody("applet", appletBody), async (c) => {
      const body = c.req.valid("json");
      const a = await applets.create({ name: body.name as string, enabled: body.enabled, definition: body.definition, tags: body.tags, by: authorOf(c.get("user")) });
      return c.json({ applet: await appletDetailOf(app, a, credentialViewOf(c)), warnings: await saveWarnings(app, a.definition, body.definition) }, 201);
    })
    // Onboarding: a ready example (lib/applets/examples) becomes a disabled applet to edit.
    .post("/api/applets/from-example", jsonBody("example", exampleBody), async (c) => {
      const a = await applets.fromExample(c.req.valid("json").key, authorOf(c.get("user")));
      return a ? c.json({ applet: await appletDetailOf(app, a, credentialViewOf(c)) }, 201) : c.json({ error: "no such example" }, 404);
    })
    .get("/api/applets/:id", async (c) => {
      const a = await appletDetail(app, c.req.param("id"), credentialViewOf(c));
      return a ? c.json({ applet: a }, 200) : c.json(notFound, 404);
    })
    .put("/api/applets/:id", jsonBody("applet", appletBody), async (c) => {
      const body = c.req.valid("json");
      const a = await applets.update(c.req.param("id"), body, authorOf(c.get("user")));
      return a ? c.json({ applet: await appletDetailOf(app, a, credentialViewOf(c)), warnings: await saveWarnings(app, a.definition, body.definition) }, 200) : c.json(notFound, 404);
    })
    .delete("/api/applets/:id", async (c) => ((await applets.delete(c.req.param("id"))) ? c.json({ deleted: true }, 200) : c.json(notFound, 404)))
    .post("/api/applets/:id/enable", async (c) => {
      const a = await applets.setEnabled(c.req.param("id"), true);
      return a ? c.json({ applet: await appletDetailOf(app, a, credentialViewOf(c)) }, 200) : c.json(notFound, 404);
    })
    .post("/api/applets/:id/disable", async (c) => {
      const a = await applets.setEnabled(c.req.param("id"), false);
      return a ? c.json({ applet: await appletDetailOf(app, a, credentialViewOf(c)) }, 200) : c.json(notFound, 404);
    })
    .get("/api/applets/:id/planned", queryParams("planned runs", plannedQuery), async (c) => {
      const q = c.req.valid("query");
      const planned = await plannedOf(app, c.req.param("id"), { status: q.status, limit: q.limit });
      return planned ? c.json(planned, 200) : c.json(notFound, 404);
    })
    // The fire ledger: every fire considered, newest first, optionally one outcome.
    .get("/api/applets/:id/ledger", queryParams("fire ledger", ledgerQuery), async (c) => {
      const id = c.req.param("id");
      if (!(await app.store.applets.get(id))) return c.json(notFound, 404);
      const q = c.req.valid("query");
      return c.json(await ledgerPage(app, id, { outcome: q.outcome as LedgerOutcome | undefined, before: q.before, limit: q.limit }), 200);
    })
    .get("/api/applets/:id/activity", async (c) => {
      const a = await app.store.applets.get(c.req.param("id"));
      return a ? c.json(await activityView(app, a), 200) : c.json(notFound, 404);
    })
    .put("/api/applets/:id/activity", jsonBody("expected activity", activityBody), async (c) => {
      const id = c.req.param("id");
      if (!(await app.store.fires.setExpectation(id, c.req.valid("json").expect_every_hours, app.clock.now().toISOString()))) return c.json(notFound, 404);
      return c.json(await activityView(app, (await app.store.applets.get(id))!), 200);
    })
    .get("/api/applets/:id/controls", async (c) => {
      const a = await app.store.applets.get(c.req.param("id"));
      return a ? c.json(await controlsView(app, a), 200) : c.json(notFound, 404);
    })
    // Controls over runs live in the definition: a change is a save (a new version) like any other.
    .put("/api/applets/:id/controls", jsonBody("controls", controlsSchema), async (c) => {
      const current = await app.store.applets.get(c.req.param("id"));
      if (!current) return c.json(notFound, 404);
      const a = await applets.update(current.id, { definition: withControls(storedDefinition(current.definition), c.req.valid("json")) }, authorOf(c.get("user")));
      return a ? c.json(await controlsView(app, a), 200) : c.json(notFound, 404);
    })
    .get("/api/applets/:id/events", async (c) => {
      const id = c.req.param("id");
      return (await app.store.applets.get(id)) ? c.json({ events: await recentEvents(app, id) }, 200) : c.json(notFound, 404);
    })
    // "Listen for test event": the next request to this webhook applet is kept as a sample,
    // also while it is disabled (lib/webhooks/listen); the editor polls /events for it.
    .post("/api/applets/:id/listen", async (c) => {
      const a = await app.store.applets.get(c.req.param("id"));
      if (!a) return c.json(notFound, 404);
      if (triggerRegistry.get(a.triggerType)?.feed !== "http") throw new UserError(`listen: only an applet fed by requests (a webhook) can listen; this one is ${a.triggerType}`, [{ path: "trigger", message: a.triggerType }]);
      const until = new Date(app.clock.now().getTime() + LISTEN_MS).toISOString();
      // Gone since the read (deleted in another tab): the same 404.
      if (!(await app.store.applets.setListening(a.id, until))) return c.json(notFound, 404);
      return c.json({ listening_until: until, webhook_url: `${app.config.publicUrl}/api/hooks/${a.id}/${a.webhookToken}` }, 200);
    })
    .delete("/api/applets/:id/listen", async (c) => {
      await app.store.applets.setListening(c.req.param("id"), null);
      return c.json({ listening: false }, 200);
    })
    .post("/api/applets/:id/duplicate", async (c) => {
      const a = await applets.duplicate(c.req.param("id"), authorOf(c.get("user")));
      return a ? c.json({ applet: await appletDetailOf(app, a, credentialViewOf(c)) }, 201) : c.json(notFound, 404);
    })
    // Version history: every save is a version; a restore is a new save of an old one.
    .get("/api/applets/:id/versions", async (c) => {
      const versions = await appletVersions(app, c.req.param("id"));
      return versions ? c.json({ versions }, 200) : c.json(notFound, 404);
    })
    .get("/api/applets/:id/versions/:n", pathParams("version", versionParams), async (c) => {
      const { id, n } = c.req.valid("param");
      const v = await appletVersion(app, id, n);
      if (v) return c.json({ version: v }, 200);
      return (await app.store.applets.get(id)) ? c.json({ error: `applet ${id} has no version ${n}` }, 404) : c.json(notFound, 404);
    })
    .post("/api/applets/:id/versions/:n/restore", pathParams("restore", versionParams), async (c) => {
      const { id, n } = c.req.valid("param");
      const a = await applets.restore(id, n, authorOf(c.get("user")));
      if (a) return c.json({ applet: await appletDetailOf(app, a, credentialViewOf(c)), restored_from: n, warnings: await saveWarnings(app, a.definition) }, 200);
      return (await app.store.applets.get(id)) ? c.json({ error: `applet ${id} has no version ${n}` }, 404) : c.json(notFound, 404);
    })
    // Rewrites the stored version: its literal credentials become "[credential purged]".
    .post("/api/applets/:id/versions/:n/purge-credentials", pathParams("purge", versionParams), async (c) => {
      const { id, n } = c.req.valid("param");
      const r = await applets.purgeCredentials(id, n);
      if (r) return c.json({ version: n, purged: r.purged }, 200);
      return (await app.store.applets.get(id)) ? c.json({ error: `applet ${id} has no version ${n}` }, 404) : c.json(notFound, 404);
    })
    .post("/api/applets/:id/test", jsonBody("test event", z.record(z.string(), z.unknown())), async (c) => {
      const id = c.req.param("id");
      if (!(await app.store.applets.get(id))) return c.json(notFound, 404);
      const r = await applets.test(id, c.req.valid("json"));
      return c.json({ run_id: r.runId, event_id: r.eventId }, 202);
    });
}
