import { timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { App } from "../app";
import { isDatabaseError } from "../core/errors";
import { createFaultTracker } from "../core/faults";
import { LIMITS } from "../core/limits";
import { Lru } from "../core/lru";
import { perTurn, turnBarrier } from "../core/per-turn";
import { processMetrics } from "../metrics";
import { checkHealth } from "../health";
import { maxAttemptsOf, storedDefinition, type Definition } from "../definition";
import { createIngestBatcher, ingestReads, ingestSkipped } from "../queue/ingest";
import { createLedgerCounter } from "../fires/counter";
import { isListening } from "../webhooks/listen";
import { closeWhenUnread, readNodeBody } from "./body";
import { createSecurityHeaders } from "./security-headers";
import { renderTemplate } from "../template";
import { mayNameSecrets } from "../template/secret-refs";
import { triggerRegistry, type RegisteredRequest } from "../triggers";
import type { HookContext } from "../triggers/types";
import { searchParamsToObject } from "../triggers/webhook";
import { createRunWaiter, renderWebhookResponse } from "../webhooks/respond";

/** What became of a webhook request (the `outcome` label of whenthen_webhook_requests_total). */
type WebhookOutcome = "accepted" | "duplicate" | "disabled" | "refused" | "not_found" | "too_large" | "unavailable" | "error";

export type IngressHandler = ((req: IncomingMessage, res: ServerResponse) => boolean) & {
  /** Writes the fire ledger's counted refusals now (they are written every few seconds on their own). */
  flushLedger(): Promise<void>;
};

/** Sub-handlers for other lean paths (e.g. `/api/files/`), matched by prefix. */
export type LeanRoute = (req: IncomingMessage, res: ServerResponse, url: URL) => void;

/**
 * The public hot paths, on plain node:http (never Next): webhooks, health, signed files.
 * Returns false for every other request so the caller hands it on.
 */
export function createIngress(app: Pick<App, "store" | "bus" | "clock" | "log" | "secrets" | "config">, routes: Record<string, LeanRoute> = {}): IngressHandler {
  const log = app.log.child("ingress");
  // Nothing the ingress answers is a page: the strict set (no framing, no sniffing, nothing runs).
  const headers = createSecurityHeaders({ publicUrl: app.config.publicUrl, dev: false });
  const hooks = createHookHandler(app, log);
  // The route table, matched in order on the URL as sent: webhooks first (the hot path), health,
  // then the other lean paths by prefix.
  const table: { matches: (rawUrl: string) => boolean; serve: (req: IncomingMessage, res: ServerResponse, rawUrl: string) => void }[] = [
    { matches: (rawUrl) => rawUrl.startsWith("/api/hooks/"), serve: hooks.serve },
    { matches: (rawUrl) => rawUrl === "/api/health" || rawUrl.startsWith("/api/health?"), serve: (_req, res) => serveHealth(app, log, res) },
    ...Object.entries(routes).map(([prefix, route]) => ({
      matches: (rawUrl: string) => rawUrl.startsWith(prefix),
      serve: (req: IncomingMessage, res: ServerResponse, rawUrl: string) => route(req, res, new URL(rawUrl, "http://localhost")),
    })),
  ];
  const handler = (req: IncomingMessage, res: ServerResponse): boolean => {
    const rawUrl = req.url ?? "/";
    if (!rawUrl.startsWith("/api/")) return false;
    for (const route of table) {
      if (!route.matches(rawUrl)) continue;
      headers.api(res);
      route.serve(req, res, rawUrl);
      return true;
    }
    return false;
  };
  return Object.assign(handler, { flushLedger: () => hooks.flushLedger() });
}

function serveHealth(app: Pick<App, "store" | "clock" | "config">, log: App["log"], res: ServerResponse): void {
  checkHealth(app)
    .then((report) => send(res, report.ok ? 200 : 503, report))
    .catch((err) => {
      log.error("health check failed", { error: err });
      if (!res.headersSent) send(res, 500, { error: "internal error" });
    });
}

/**
 * What a hook needs from the definition, parsed once per version of it: the row is read on every
 * request (so a disable or an edit applies at once), the JSON is parsed only when it changed.
 * The trigger plug-in fed by requests (`feed: "http"`) decides what a request becomes.
 */
type HookSettings = { raw: string; plugin: RegisteredRequest | null; config: unknown; problem: string | null; maxAttempts: number; definition?: Definition };

function createHookSettings(): (id: string, raw: string) => HookSettings {
  const settings = new Lru<string, HookSettings>(10_000);
  return (id, raw) => {
    let s = settings.get(id);
    if (s?.raw !== raw) {
      const definition = storedDefinition(JSON.parse(raw));
      const found = triggerRegistry.get(String(definition.trigger?.type));
      const plugin = found?.feed === "http" ? found : null;
      const parsed = plugin?.configSchema.safeParse(definition.trigger?.config ?? {});
      const problem = !plugin || parsed?.success ? null : "the stored trigger config is invalid";
      s = { raw, plugin, config: parsed?.success ? parsed.data : null, problem, maxAttempts: maxAttemptsOf(definition), definition: ingestReads(definition) ? definition : undefined };
      settings.set(id, s);
    }
    return s;
  };
}

/**
 * What a trigger plug-in renders with. A plug-in renders synchronously (the hot path); secrets are
 * read, once per request, only for a config that names one (a signed webhook's hmac_secret).
 */
function createHookContexts(app: Pick<App, "clock" | "secrets">): (config: unknown) => Promise<HookContext> {
  const namesSecrets = new WeakMap<object, boolean>();
  const usesSecrets = (config: unknown): boolean => {
    if (typeof config !== "object" || config === null) return false;
    let uses = namesSecrets.get(config);
    if (uses === undefined) namesSecrets.set(config, (uses = mayNameSecrets(config)));
    return uses;
  };
  const noSecrets = () => undefined;
  // One read of the stored secrets per turn of the event loop, shared by the signed webhooks that
  // arrived in it (under load dozens): requests of one turn are concurrent anyway.
  const secretsThisTurn = perTurn(() => app.secrets.lookup());
  return async (config) => {
    const secrets = usesSecrets(config) ? await secretsThisTurn.get() : noSecrets;
    return { render: (template) => renderTemplate(template, { trigger: {}, secrets }).value, nowMs: () => app.clock.now().getTime() };
  };
}

/** `POST|GET /api/hooks/<applet id>/<token>`: a request becomes an event and its run. */
function createHookHandler(app: Pick<App, "store" | "bus" | "clock" | "log" | "secrets" | "config">, log: App["log"]) {
  // A full disk refuses every webhook: one line when it starts, then one a minute, not one each.
  const faults = createFaultTracker({ clock: app.clock, log, meanwhile: "answering 503 with Retry-After until it works again" });
  const ingestBatched = createIngestBatcher(app);
  const hookSettings = createHookSettings();
  const hookContextFor = createHookContexts(app);
  // The requests of one turn reach their trigger plug-in (the signature check, the payload) together.
  const together = turnBarrier();
  const refusals = createRefusalLog(app, log);
  // The fire ledger counts refused and disabled requests per minute (lib/fires/counter); an accepted
  // webhook writes nothing more than its event and run (lib/db/store/ledger-sql.ts says why).
  const ledger = createLedgerCounter(app);
  // One in-memory increment per request (lib/metrics countWebhook): no write, no await.
  const metrics = processMetrics();
  const count = (outcome: WebhookOutcome) => metrics.countWebhook(outcome);
  const waiter = createRunWaiter(app);
  return {
    serve: (req: IncomingMessage, res: ServerResponse, rawUrl: string): void => {
      handleHook(req, res, rawUrl).then(count, (err) => {
        // A full disk (or another refusal of the database) is not the sender's fault and passes:
        // 503 with Retry-After asks the sender to deliver again later. Nothing was stored.
        if (isDatabaseError(err)) {
          count("unavailable");
          faults.failed("storing webhooks", err);
          if (!res.headersSent) send(res, 503, { error: "the webhook could not be stored (the database refused the write); retry later" }, { "retry-after": "30" });
          return;
        }
        log.error("webhook failed", { error: err });
        count("error");
        if (!res.headersSent) send(res, 500, { error: "internal error" });
      });
    },
    flushLedger: () => ledger.flush(),
  };

  async function handleHook(req: IncomingMessage, res: ServerResponse, rawUrl: string): Promise<WebhookOutcome> {
    // The path as sent (a WHATWG URL costs ~2 µs a request; only a query string needs parsing).
    const q = rawUrl.indexOf("?");
    const parts = (q === -1 ? rawUrl : rawUrl.slice(0, q)).split("/");
    // ["", "api", "hooks", id, token]
    if (parts.length !== 5 || (req.method !== "POST" && req.method !== "GET")) return notFound(req, res);
    let appletId: string;
    let token: string;
    try {
      appletId = decodeURIComponent(parts[3]!);
      token = decodeURIComponent(parts[4]!);
    } catch {
      return notFound(req, res);
    }
    const row = await app.store.applets.forHook(appletId);
    // Compared whether or not the applet exists, so a missing applet and a wrong token take as long.
    const tokenOk = safeEqual(token, row?.webhookToken ?? token.replace(/./g, "\0"));
    if (!row || !tokenOk) return notFound(req, res);
    // An applet whose trigger is not fed by requests (a schedule) answers like an unknown hook.
    const { plugin, config, problem, maxAttempts, definition } = hookSettings(row.id, row.definition);
    if (!plugin) return notFound(req, res);

    const rawBody = await readNodeBody(req, LIMITS.webhookBodyBytes);
    if (rawBody === null) {
      ledger.note(row.id, "refused", `the body was larger than ${LIMITS.webhookBodyBytes / 1024 / 1024} MB (answered 413)`);
      return tooLarge(req, res);
    }

    if (problem) {
      ledger.note(row.id, "refused", `the applet cannot take requests: ${problem} (answered 409)`);
      log.warn("webhook refused: the applet cannot take requests", { applet_id: row.id, reason: problem });
      send(res, 409, { error: `this applet cannot take requests: ${problem}` });
      return "refused";
    }

    const context = await hookContextFor(config);
    await together();
    const receivedAt = app.clock.now().toISOString();
    const outcome = plugin.handleRequest(
      config,
      { method: req.method, headers: req.headers, query: q === -1 ? {} : searchParamsToObject(new URLSearchParams(rawUrl.slice(q + 1))), rawBody, contentType: String(req.headers["content-type"] ?? ""), receivedAt },
      context,
    );
    if (!outcome.accept) {
      if (outcome.reason) refusals.note(row.id, outcome.reason);
      ledger.note(row.id, "refused", `${outcome.reason ?? outcome.error ?? "refused by the trigger"} (answered ${outcome.status})`);
      if (outcome.error) send(res, outcome.status, { error: outcome.error });
      else {
        res.writeHead(outcome.status, { "content-length": "0" });
        res.end();
      }
      return "refused";
    }
    const dedupeKey = outcome.event.dedupeKey;
    // A disabled applet answers only a request that passed its check (its signature, its bearer
    // token): "disabled" told a forger that the URL was right and the signature was all it lacked.
    // "Listen for test event": a disabled applet's request is kept as a sample, and nothing
    // runs. The first request ends the listening; of two at once (two web processes) one is the sample.
    const capture = isListening(row.listenUntil, app.clock.now());
    const captured = capture && (await app.store.applets.takeListening(row.id, receivedAt));
    if (!row.enabled && !captured) {
      ledger.note(row.id, "disabled", "the applet is disabled; the request was answered 200 and nothing ran");
      send(res, 200, { queued: false, reason: "disabled" });
      return "disabled";
    }
    if (!row.enabled) {
      const kept = await ingestSkipped(app, { appletId, source: plugin.type, dedupeKey, payload: outcome.event.payload, maxAttempts, receivedAt }, "captured by “Listen for test event”: the applet is disabled, so nothing ran");
      send(res, 200, { queued: false, reason: "captured for the editor's test; the applet is disabled, so nothing ran", event_id: kept?.eventId ?? null });
      return "disabled";
    }
    const result = await ingestBatched({ appletId, source: plugin.type, dedupeKey, payload: outcome.event.payload, maxAttempts, receivedAt, definition });
    faults.succeeded("storing webhooks");
    if (!result) {
      // A redelivery: the sender gets the first delivery's ids, and nothing new is stored.
      const first = dedupeKey === null ? null : await app.store.runs.firstOfDedupeKey(appletId, dedupeKey);
      // A redelivery is not the hot path (the sender repeats itself): its ledger row is written now.
      await app.store.fires.record(
        [{ appletId, at: receivedAt, outcome: "deduplicated", dedupeKey, runId: first?.runId ?? null, detail: `the key "${dedupeKey}" was already delivered${first?.runId ? "; the earlier run stands" : ""}` }],
        receivedAt,
      );
      send(res, 200, { queued: false, duplicate: true, reason: "duplicate", run_id: first?.runId ?? null, event_id: first?.eventId ?? null });
      return "duplicate";
    }
    const respond = outcome.respond;
    if (respond?.respond_wait_seconds) {
      // Respond with data: the sender's socket waits (nothing else does); a run that is not done in
      // time gets the same 202 as without the option, and runs on.
      const run = await waiter.wait(result.runId, respond.respond_wait_seconds * 1000);
      if (run && !res.destroyed) {
        const answer = renderWebhookResponse(respond, run, outcome.event.payload);
        res.writeHead(answer.status, { "content-type": answer.contentType, "content-length": Buffer.byteLength(answer.body), "x-run-id": run.id });
        res.end(answer.body);
        return "accepted";
      }
    }
    send(res, 202, { run_id: result.runId, event_id: result.eventId });
    return "accepted";
  }
}

/** Constant time for equal lengths; a length mismatch says nothing (every token has the same length). */
function safeEqual(a: string, b: string): boolean {
  const ba = Buffer.from(a);
  const bb = Buffer.from(b);
  return ba.length === bb.length && timingSafeEqual(ba, bb);
}

function notFound(req: IncomingMessage, res: ServerResponse): "not_found" {
  req.resume();
  res.writeHead(404, { "content-length": "0" });
  res.end();
  return "not_found";
}

function tooLarge(req: IncomingMessage, res: ServerResponse): "too_large" {
  // Stop reading and close: a client still sending 50 MB should not keep the socket busy.
  closeWhenUnread(req, res);
  res.writeHead(413, { "content-type": "application/json", connection: "close" });
  res.end(JSON.stringify({ error: `body larger than ${LIMITS.webhookBodyBytes} bytes` }));
  req.resume();
  return "too_large";
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  const text = JSON.stringify(body);
  res.writeHead(status, { ...headers, "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

/**
 * Why a request was refused, for the person setting the sender up: one warning per applet a
 * minute (a flood of forged requests must not flood the log), with how many were refused since.
 */
function createRefusalLog(app: Pick<App, "clock">, log: App["log"]) {
  const last = new Map<string, { at: number; since: number }>();
  return {
    note(appletId: string, reason: string) {
      const now = app.clock.now().getTime();
      const seen = last.get(appletId);
      if (seen && now - seen.at < 60_000) {
        seen.since++;
        return;
      }
      if (last.size >= 10_000) last.clear();
      last.set(appletId, { at: now, since: 0 });
      log.warn("webhook refused: the request's signature or credentials do not check out", { applet_id: appletId, reason, refused_since_last_warning: seen?.since ?? 0 });
    },
  };
}
