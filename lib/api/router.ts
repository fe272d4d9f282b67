import type { App } from "../app";
import { actionRegistry } from "../actions";
import { testSpreadsheetAccess } from "../actions/sheets";
import { serviceAccountEmail } from "../actions/sheets";
import { importModeOf, type AppletService } from "../applets/service";
import { TooLargeError, UserError, errorMessage } from "../core/errors";
import { LIMITS } from "../core/limits";
import { localIso } from "../core/local-iso";
import { checkDefinition, timezoneOf } from "../definition";
import type { Sandbox } from "../sandbox";
import { renderConfig } from "../template";
import { triggerRegistry } from "../triggers";
import { pollContext } from "../triggers/context";
import { actionTypesOf, runRow } from "./serialize";
import { asObject, compile, json, notFound, readJson, type CompiledRoute, type Route } from "./http";
import { recentEvents } from "./samples";
import { saveWarnings } from "./warnings";
import { streamRuns } from "./stream";

export interface ApiAuth {
  /** null: the request may go on; a Response: answer with it (401, 403). */
  check(req: Request): Promise<Response | null> | Response | null;
  /** Setup, login, logout, session. */
  routes: Route[];
}

export interface ApiDeps {
  app: App;
  applets: AppletService;
  sandbox?: Sandbox;
  auth?: ApiAuth;
  /** How often an open /api/stream pings and re-checks its session (default 15 s). */
  streamPingMs?: number;
}

export interface Api {
  handle(req: Request): Promise<Response>;
}

/**
 * The session-protected JSON API, framework-free (Web Request → Response). Next's catch-all route
 * hands requests here; tests call `handle` directly.
 */
export function createApi(deps: ApiDeps): Api {
  const { app, applets } = deps;
  const webhookUrl = (a: { id: string; webhookToken: string }) => `${app.config.publicUrl}/api/hooks/${a.id}/${a.webhookToken}`;

  const routes: Route[] = [
    ...(deps.auth?.routes ?? []),
    {
      method: "GET",
      pattern: "/api/meta",
      handler: () =>
        json({
          public_url: app.config.publicUrl,
          inbound_domain: app.config.inboundDomain,
          smtp_inbound_port: app.config.smtpInboundPort,
          // The editor's note path preview, the settings page and the AI transform hint.
          notes_root: app.config.notesRoot,
          google_service_account_email: serviceAccountEmail(app.config),
          ai_configured: Boolean(app.config.openrouterApiKey),
          triggers: [...triggerRegistry.values()].map((t) => ({ type: t.type, label: t.label, description: t.description, fields: t.fields, ingredients: t.ingredients, sample: t.sample, can_fetch: Boolean(t.preview) })),
          actions: [...actionRegistry.values()].map((a) => ({ type: a.type, label: a.label, description: a.description, fields: a.fields, available: a.available ? a.available(app) : true })),
        }),
    },
    {
      method: "GET",
      pattern: "/api/applets",
      handler: () => {
        const stats = new Map(app.repos.runs.statsByApplet(new Date(app.clock.now().getTime() - 86_400_000).toISOString()).map((s) => [s.applet_id, s]));
        return json({
          applets: app.repos.applets.list().map((a) => ({
            ...summary(a),
            runs_24h: stats.get(a.id)?.runs_24h ?? 0,
            last_run_status: stats.get(a.id)?.last_status ?? null,
            last_run_at: stats.get(a.id)?.last_at ?? null,
          })),
        });
      },
    },
    {
      method: "POST",
      pattern: "/api/applets",
      handler: async (req) => {
        const body = asObject(await readJson(req), "applet");
        const a = applets.create({ name: body.name as string, enabled: body.enabled as boolean | undefined, definition: body.definition });
        return json({ applet: detail(a), warnings: saveWarnings(app, a.definition) }, 201);
      },
    },
    {
      method: "POST",
      pattern: "/api/applets/preview",
      handler: async (req) => {
        const body = asObject(await readJson(req), "preview");
        const checked = checkDefinition(body.definition);
        const def = checked.ok ? checked.definition : (body.definition as { actions?: { type: string; config: unknown }[]; timezone?: string; trigger?: { config?: Record<string, unknown> } });
        const sample = body.sample ?? {};
        const known = new Set(app.secrets.list().map((s) => s.name));
        const timezone = checked.ok ? timezoneOf(checked.definition) : "UTC";
        const now = app.clock.now();
        const ctx = {
          trigger: sample,
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

        const actions = (def.actions ?? []).map((a, index) => {
          const r = renderConfig(a?.config ?? {}, ctx, { timezone, typedKeys: actionRegistry.get(String(a?.type))?.typedConfig });
          return { index, type: a?.type, rendered: r.rendered, warnings: r.warnings, unresolved: r.warnings.filter((w) => w.startsWith("unresolved: ")).map((w) => w.slice("unresolved: ".length)) };
        });
        return json({ actions, problems: checked.ok ? [] : checked.problems });
      },
    },
    {
      method: "POST",
      pattern: "/api/applets/filter-test",
      handler: async (req) => {
        const body = asObject(await readJson(req), "filter test");
        if (typeof body.code !== "string") throw new UserError("filter-test: code must be a string", [{ path: "code", message: "required" }]);
        if (!deps.sandbox) return json({ error: "the sandbox is not available in this process" }, 503);
        const r = await deps.sandbox.run({ code: body.code, trigger: body.sample ?? {}, applet: { id: "preview", name: "Preview" } });
        return json({ vars: r.vars, logs: r.logs, skipped: r.skipped, reason: r.reason ?? null, error: r.error ?? null, duration_ms: r.duration_ms });
      },
    },
    {
      method: "POST",
      pattern: "/api/triggers/fetch",
      handler: async (req) => {
        const body = asObject(await readJson(req), "fetch");
        const plugin = triggerRegistry.get(String(body.type));
        if (!plugin?.preview) throw new UserError(`fetch: trigger type "${String(body.type)}" cannot be fetched`, [{ path: "type", message: "expected rss or poll" }]);
        const parsed = plugin.configSchema.safeParse(body.config ?? {});
        if (!parsed.success) {
          throw new UserError("fetch: invalid config", parsed.error.issues.map((i) => ({ path: `config.${i.path.join(".")}`, message: i.message })));
        }
        // The answer goes to the browser: no secret the fetch rendered may be in it.
        const ctx = pollContext(app);
        try {
          const result = await plugin.preview(parsed.data, ctx);
          return json({ ok: true, result: ctx.redact(result) });
        } catch (err) {
          return json({ ok: false, error: ctx.redact(errorMessage(err)) }, 200);
        }
      },
    },
    {
      method: "GET",
      pattern: "/api/applets/:id",
      handler: (_req, p) => {
        const a = app.repos.applets.get(p.id!);
        return a ? json({ applet: detail(a) }) : notFound("no such applet");
      },
    },
    {
      method: "PUT",
      pattern: "/api/applets/:id",
      handler: async (req, p) => {
        const body = asObject(await readJson(req), "applet");
        const a = applets.update(p.id!, { name: body.name as string | undefined, enabled: body.enabled as boolean | undefined, definition: body.definition });
        return a ? json({ applet: detail(a), warnings: saveWarnings(app, a.definition) }) : notFound("no such applet");
      },
    },
    {
      method: "DELETE",
      pattern: "/api/applets/:id",
      handler: async (_req, p) => ((await applets.delete(p.id!)) ? json({ deleted: true }) : notFound("no such applet")),
    },
    ...(["enable", "disable"] as const).map(
      (verb): Route => ({
        method: "POST",
        pattern: `/api/applets/:id/${verb}`,
        handler: (_req, p) => {
          const a = applets.setEnabled(p.id!, verb === "enable");
          return a ? json({ applet: detail(a) }) : notFound("no such applet");
        },
      }),
    ),
    {
      method: "POST",
      pattern: "/api/applets/:id/duplicate",
      handler: (_req, p) => {
        const a = applets.duplicate(p.id!);
        return a ? json({ applet: detail(a) }, 201) : notFound("no such applet");
      },
    },
    {
      method: "POST",
      pattern: "/api/applets/:id/test",
      handler: async (req, p) => {
        if (!app.repos.applets.get(p.id!)) return notFound("no such applet");
        const r = applets.test(p.id!, await readJson(req));
        return json({ run_id: r.runId, event_id: r.eventId }, 202);
      },
    },
    {
      method: "GET",
      pattern: "/api/applets/:id/events",
      handler: (_req, p) => (app.repos.applets.get(p.id!) ? json({ events: recentEvents(app, p.id!) }) : notFound("no such applet")),
    },
    {
      method: "GET",
      pattern: "/api/runs",
      handler: (_req, _p, url) => {
        const q = url.searchParams;
        const page = app.repos.runs.list({
          appletId: q.get("applet_id") || undefined,
          status: q.get("status") || undefined,
          from: q.get("from") || undefined,
          to: q.get("to") || undefined,
          cursor: q.get("cursor") || undefined,
          limit: LIMITS.runsPageSize,
        });
        const names = new Map(app.repos.applets.list().map((a) => [a.id, a.name]));
        return json({ runs: page.runs.map((r) => runRow(r, names.get(r.appletId) ?? null)), next_cursor: page.nextCursor });
      },
    },
    {
      method: "GET",
      pattern: "/api/runs/:id",
      handler: (_req, p) => {
        const run = app.repos.runs.get(p.id!);
        if (!run) return notFound("no such run");
        const event = app.repos.runs.event(run.eventId);
        const applet = app.repos.applets.get(run.appletId);
        return json({
          run: { ...runRow(run, applet?.name ?? null), steps: run.steps },
          event: event && { id: event.id, applet_id: event.appletId, source: event.source, dedupe_key: event.dedupeKey, payload: event.payload, received_at: event.receivedAt },
          applet: applet ? { id: applet.id, name: applet.name } : null,
        });
      },
    },
    {
      method: "POST",
      pattern: "/api/runs/:id/retry",
      handler: (_req, p) => {
        const run = app.repos.runs.get(p.id!);
        if (!run) return notFound("no such run");
        if (!app.repos.runs.retry(run.id, app.clock.now())) {
          throw new UserError(`retry: only failed or dead runs can be retried; this one is ${run.status}`, [{ path: "status", message: run.status }]);
        }
        app.bus.publish({ type: "run.updated", run_id: run.id, applet_id: run.appletId, status: "queued" });
        return json({ run_id: run.id, attempt: run.attempt + 1 }, 202);
      },
    },
    {
      method: "POST",
      pattern: "/api/runs/:id/replay",
      handler: (_req, p) => {
        const run = app.repos.runs.get(p.id!);
        if (!run) return notFound("no such run");
        const id = app.repos.runs.replay(run.id, app.clock.now())!;
        app.bus.publish({ type: "run.queued", run_id: id, applet_id: run.appletId, status: "queued" });
        return json({ run_id: id }, 202);
      },
    },
    {
      method: "GET",
      pattern: "/api/stream",
      handler: (req) =>
        streamRuns(app.bus, req, {
          pingMs: deps.streamPingMs,
          stillAllowed: deps.auth ? async () => (await deps.auth!.check(req)) === null : undefined,
        }),
    },
    {
      method: "POST",
      pattern: "/api/settings/sheets-test",
      handler: async (req) => {
        const body = asObject(await readJson(req), "sheets test");
        return json(await testSpreadsheetAccess(app.config, String(body.spreadsheet ?? "")));
      },
    },
    { method: "GET", pattern: "/api/secrets", handler: () => json({ secrets: app.secrets.list().map((s) => ({ name: s.name, created_at: s.createdAt, updated_at: s.updatedAt })) }) },
    {
      method: "POST",
      pattern: "/api/secrets",
      handler: async (req) => {
        const body = asObject(await readJson(req), "secret");
        app.secrets.set(String(body.name ?? ""), body.value as string);
        return json({ name: body.name }, 201);
      },
    },
    { method: "DELETE", pattern: "/api/secrets/:name", handler: (_req, p) => (app.secrets.delete(p.name!) ? json({ deleted: true }) : notFound("no such secret")) },
    {
      method: "GET",
      pattern: "/api/export",
      handler: (_req, _p, url) => {
        const id = url.searchParams.get("applet_id");
        const body = id ? [applets.exportOne(id)].filter(Boolean) : applets.exportAll();
        const name = id ? `whenthen-applet-${id}.json` : `whenthen-applets-${app.clock.now().toISOString().slice(0, 10)}.json`;
        return json(body, 200, { "content-disposition": `attachment; filename="${name}"` });
      },
    },
    {
      method: "POST",
      pattern: "/api/import",
      handler: async (req, _p, url) => {
        const q = url.searchParams;
        const mode = importModeOf(q.get("existing")) ?? (q.get("overwrite") === "true" ? "replace" : "refuse");
        const result = applets.import(await readJson(req, LIMITS.importBodyBytes), mode, (q.get("replace") ?? "").split(",").filter(Boolean));
        return json(result, 200);
      },
    },
  ];
  const compiled: CompiledRoute[] = routes.map(compile);

  function summary(a: NonNullable<ReturnType<App["repos"]["applets"]["get"]>>) {
    return {
      id: a.id,
      name: a.name,
      enabled: a.enabled,
      trigger_type: a.triggerType,
      action_types: actionTypesOf(a),
      last_fired_at: a.lastFiredAt,
      run_count: a.runCount,
      created_at: a.createdAt,
      updated_at: a.updatedAt,
    };
  }
  function detail(a: NonNullable<ReturnType<App["repos"]["applets"]["get"]>>) {
    const state = app.repos.triggerState.get(a.id);
    return {
      ...summary(a),
      definition: a.definition,
      webhook_token: a.webhookToken,
      webhook_url: webhookUrl(a),
      trigger_state: state
        ? { next_run_at: state.nextRunAt, last_polled_at: state.lastPolledAt, last_error: state.lastError, error_count: state.errorCount, seen_keys: state.seenKeys.length, last_value: state.lastValue }
        : null,
    };
  }

  return {
    async handle(req: Request): Promise<Response> {
      const url = new URL(req.url);
      const matches = compiled.filter((r) => r.regex.test(url.pathname));
      if (!matches.length) return notFound();
      const route = matches.find((r) => r.method === req.method);
      if (!route) return json({ error: `method ${req.method} not allowed` }, 405, { allow: matches.map((m) => m.method).join(", ") });
      try {
        if (!route.public && deps.auth) {
          const denied = await deps.auth.check(req);
          if (denied) return denied;
        }
        const m = route.regex.exec(url.pathname)!;
        const params = Object.fromEntries(route.keys.map((k, i) => [k, decodeURIComponent(m[i + 1]!)]));
        return await route.handler(req, params, url);
      } catch (err) {
        // The rest of an oversized body is never read: the connection closes after the answer.
        if (err instanceof TooLargeError) return json({ error: err.message, problems: err.details ?? [] }, 413, { connection: "close" });
        if (err instanceof UserError) return json({ error: err.message, problems: err.details ?? [] }, 400);
        app.log.error("api error", { path: url.pathname, error: err });
        return json({ error: "internal error" }, 500);
      }
    },
  };
}
