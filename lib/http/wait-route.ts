import type { IncomingMessage, ServerResponse } from "node:http";
import type { App } from "../app";
import { errorMessage } from "../core/errors";
import { LIMITS } from "../core/limits";
import type { StoredWait, WaitResolution } from "../db/store/types";
import { closeWhenUnread, readNodeBody } from "./body";
import { parseWaitPath, type WaitAddress } from "../waits/links";
import { approvalPage, type PageView } from "../waits/page";
import { callSignatures, checkCall } from "../waits/signature";
import { renderTemplate } from "../template";

/**
 * The public resume and approval links (`/api/waits/<run>/<n>/<mac>[/approve|/deny]`), on the lean
 * ingress. Only a POST decides: a GET of the resume URL describes the wait, a GET of an approval
 * link shows what is being approved and asks for one click, so a link preview or a mail scanner
 * fetching it decides nothing. Each wait is resolved once (the store's conditional update); a
 * second use, a use after the timeout or for a cancelled run is told which, and changes nothing.
 */
export function createWaitRoute(app: Pick<App, "store" | "clock" | "config" | "log" | "secrets">) {
  const log = app.log.child("waits");
  return (req: IncomingMessage, res: ServerResponse, url: URL): void => {
    handle(req, res, url).catch((err) => {
      log.error("wait link failed", { error: errorMessage(err) });
      if (!res.headersSent) answer(req, res, 500, { error: "internal error" }, { title: "Something went wrong", text: "The request could not be handled; try again." });
    });
  };

  async function handle(req: IncomingMessage, res: ServerResponse, url: URL) {
    const address = parseWaitPath(url.pathname, app.config.sessionSecret);
    if (!address) return answer(req, res, 404, { error: "not found" }, { title: "Link not found", text: "This link is not (or no longer) a link of a run." });
    if (req.method !== "GET" && req.method !== "POST" && req.method !== "HEAD") return answer(req, res, 405, { error: "use GET to look, POST to decide" }, { title: "Not allowed", text: "Use the button on this page." });
    const run = await app.store.runs.get(address.runId);
    if (!run) return answer(req, res, 404, { error: "not found" }, { title: "Link not found", text: "This run no longer exists." });
    const wait = await app.store.waits.get(address.runId, address.seq);
    const appletRow = await app.store.applets.get(run.appletId);
    const applet = appletRow?.name ?? "an applet";
    const view: Omit<PageView, "title" | "text"> = { applet, runId: run.id, message: typeof wait?.detail.message === "string" ? wait.detail.message : null };

    if (address.action === "resume") return resume(req, res, address, wait, run.status, run.appletId, appletRow?.definition ?? null, view);
    // Approval links: the wait must be an approval the run has reached.
    if (!wait) {
      if (run.status === "queued" || run.status === "running") return answer(req, res, 409, { error: "the run has not reached its approval yet; open the link again in a moment", status: "not_reached" }, { ...view, title: "Not yet", text: "This run has not reached its approval yet. Open the link again in a moment." });
      return answer(req, res, 410, { error: `the run has ended (${run.status}) without reaching this approval`, status: run.status }, { ...view, title: "Nothing to decide", text: `This run has ended (${run.status}) without reaching this approval.` });
    }
    if (wait.kind !== "for_approval") return answer(req, res, 404, { error: "this link is not an approval link" }, { title: "Link not found", text: "This is not an approval link." });
    if (wait.resolution) return settledAnswer(req, res, wait, view);
    if (req.method !== "POST") {
      // Looking decides nothing: the page asks for one click.
      return answer(req, res, 200, { status: "waiting", decision: address.action, message: view.message, timeout_at: wait.timeoutAt }, { ...view, title: address.action === "approve" ? "Approve?" : "Deny?", text: wait.timeoutAt ? `This approval times out at ${wait.timeoutAt.slice(0, 16).replace("T", " ")} UTC.` : "", ask: address.action });
    }
    // A form's few bytes: read and dropped.
    req.resume();
    const resolution: WaitResolution = address.action === "approve" ? "approved" : "denied";
    const by = clientAddress(req, app.config.trustProxy);
    const now = app.clock.now();
    const r = await app.store.waits.resolve({ runId: run.id, seq: address.seq, resolution, by, now, output: { decision: resolution, at: now.toISOString(), by } });
    if (!r.resolved) return r.wait ? settledAnswer(req, res, r.wait, view) : answer(req, res, 409, { error: "nothing to decide" }, { ...view, title: "Nothing to decide", text: "This approval is not open." });
    log.info("wait decided", { run_id: run.id, seq: address.seq, decision: resolution, by });
    return answer(req, res, 200, { status: resolution, at: now.toISOString(), by }, { ...view, title: resolution === "approved" ? "Approved" : "Denied", text: `Recorded at ${now.toISOString()} from ${by}. The run carries on.` });
  }

  async function resume(
    req: IncomingMessage,
    res: ServerResponse,
    address: WaitAddress,
    wait: StoredWait | null,
    runStatus: string,
    appletId: string,
    definition: Record<string, unknown> | null,
    view: Omit<PageView, "title" | "text">,
  ) {
    if (wait && wait.kind !== "for_call") return answer(req, res, 409, { error: "this run's wait is not waiting for a call; approvals use their approve and deny links" }, { ...view, title: "Wrong link", text: "This wait is not waiting for a call." });
    if (wait?.resolution) return settledAnswer(req, res, wait, view);
    if (req.method !== "POST") return answer(req, res, 200, { status: wait ? "waiting" : "not_reached", hint: "POST to this URL to resume the run; the body becomes the wait step's output" }, { ...view, title: "Waiting for a call", text: "POST to this URL to resume the run." });
    const raw = await readNodeBody(req, LIMITS.webhookBodyBytes);
    if (raw === null) {
      // Refused as the webhook trigger refuses it.
      closeWhenUnread(req, res);
      res.writeHead(413, { "content-type": "application/json", connection: "close" });
      res.end(JSON.stringify({ error: `body larger than ${LIMITS.webhookBodyBytes} bytes` }));
      req.resume();
      return;
    }
    // The wait's signature check (the webhook trigger's presets), before anything counts: a call
    // that fails it changes nothing, and the link stays good for a correctly signed one.
    const signatures = definition ? callSignatures(definition, wait ? wait.stepId : null) : [];
    if (signatures.length > 0) {
      const secrets = await app.secrets.lookup();
      const verdict = checkCall(signatures, { rawBody: raw, headers: req.headers }, (t) => renderTemplate(t, { trigger: {}, secrets }).value, app.clock.now().getTime());
      if (!verdict.ok) {
        log.warn("wait call refused: bad signature", { run_id: address.runId, seq: address.seq, reasons: verdict.reasons.join("; ") });
        const text = `This wait accepts only calls signed for its ${verdict.checks} check, and this call's signature is missing or does not match. Nothing was changed; the link still works for a correctly signed call.`;
        return answer(req, res, 401, { error: text, status: "bad_signature" }, { ...view, title: "Signature refused", text });
      }
    }
    if (!wait && runStatus !== "queued" && runStatus !== "running") return answer(req, res, 410, { error: `the run has ended (${runStatus}) without reaching this wait`, status: runStatus }, { ...view, title: "Nothing to resume", text: `This run has ended (${runStatus}).` });
    const by = clientAddress(req, app.config.trustProxy);
    const now = app.clock.now();
    const output = bodyValue(raw, String(req.headers["content-type"] ?? ""));
    const r = await app.store.waits.resolve({ runId: address.runId, seq: address.seq, resolution: "called", by, now, output, ...(wait ? {} : { early: { appletId, kind: "for_call" as const } }) });
    if (!r.resolved) return r.wait ? settledAnswer(req, res, r.wait, view) : answer(req, res, 409, { error: "nothing to resume" }, { ...view, title: "Nothing to resume", text: "This wait is not open." });
    return answer(req, res, 202, { status: "resumed", run_id: address.runId, at: now.toISOString() }, { ...view, title: "Resumed", text: "The run carries on." });
  }
}

/** Why a link changes nothing any more, in words: used, decided, timed out, cancelled. */
export function settledWords(w: StoredWait): { status: number; code: string; text: string } {
  const at = w.resolvedAt ?? "";
  switch (w.resolution) {
    case "called":
      return { status: 409, code: "already_used", text: `This resume URL was already used, at ${at} from ${w.resolvedBy ?? "?"}. Nothing was changed.` };
    case "approved":
    case "denied":
      return { status: 409, code: "already_decided", text: `This was already decided: ${w.resolution} at ${at} from ${w.resolvedBy ?? "?"}. Nothing was changed.` };
    case "timeout":
      return { status: 410, code: "timed_out", text: `This wait timed out at ${at}. Nothing was changed.` };
    case "cancelled":
      return { status: 410, code: "cancelled", text: `This run was cancelled at ${at}. Nothing was changed.` };
    case "resumed":
      return { status: 409, code: "already_resumed", text: `This run was resumed from the run log at ${at}. Nothing was changed.` };
    default:
      return { status: 409, code: "already_resumed", text: `This wait already ended (${w.resolution ?? "?"}) at ${at}. Nothing was changed.` };
  }
}

function settledAnswer(req: IncomingMessage, res: ServerResponse, w: StoredWait, view: Omit<PageView, "title" | "text">) {
  const s = settledWords(w);
  answer(req, res, s.status, { error: s.text, status: s.code, resolution: w.resolution, at: w.resolvedAt, by: w.resolvedBy }, { ...view, title: s.code === "already_decided" ? "Already decided" : s.code === "timed_out" ? "Timed out" : s.code === "cancelled" ? "Cancelled" : "Already used", text: s.text });
}

/** A browser (Accept: text/html) gets the page; anything else JSON. */
function answer(req: IncomingMessage, res: ServerResponse, status: number, json: Record<string, unknown>, page: PageView) {
  if (res.headersSent) return;
  const wantsHtml = String(req.headers.accept ?? "").includes("text/html");
  if (!wantsHtml) {
    const text = JSON.stringify(json);
    res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text), "cache-control": "no-store" });
    res.end(req.method === "HEAD" ? undefined : text);
    return;
  }
  const html = approvalPage(page);
  // The page's own policy: its inline style and its one form posting back to itself, nothing else.
  res.setHeader("content-security-policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'");
  res.writeHead(status, { "content-type": "text/html; charset=utf-8", "content-length": Buffer.byteLength(html), "cache-control": "no-store", "referrer-policy": "no-referrer" });
  res.end(req.method === "HEAD" ? undefined : html);
}

function clientAddress(req: IncomingMessage, trustProxy: boolean): string {
  const forwarded = trustProxy ? String(req.headers["x-forwarded-for"] ?? "").split(",").pop()?.trim() : "";
  return forwarded || req.socket.remoteAddress || "unknown";
}

/** A call's body as the step's output: JSON when it parses, the text otherwise, null when empty. */
function bodyValue(raw: Buffer, contentType: string): unknown {
  const text = raw.toString("utf8");
  if (text.trim() === "") return null;
  if (contentType.includes("json") || /^[\s]*[[{"\d-tfn]/.test(text)) {
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  }
  return text;
}
