import type { App } from "../app";
import type { Run } from "../db/store";
import type { RunStatus } from "../executor/types";
import { renderTemplate } from "../template";
import type { RespondConfig } from "../triggers/types";

/**
 * "Respond with data": a webhook may wait for its run (bounded) and answer with a body rendered
 * from the run's outputs. The default stays the durable 202 in a few milliseconds; waiting never
 * holds anything but the sender's socket.
 */

export const MAX_RESPOND_WAIT_SECONDS = 10;
/** Webhooks waiting at once; past this a request gets the plain 202 at once. */
export const MAX_WAITERS = 1_000;
/** A rendered response body is cut at this size. */
export const MAX_RESPONSE_BYTES = 64 * 1024;

const FINAL: ReadonlySet<RunStatus> = new Set(["succeeded", "failed", "skipped", "dead"]);

export type { RespondConfig };

/**
 * One loop for every waiting webhook: a single query for all their statuses per tick, so a thousand
 * waiting senders cost one indexed read every `intervalMs`, not a thousand.
 */
export function createRunWaiter(app: Pick<App, "store" | "log">, opts: { intervalMs?: number } = {}) {
  const intervalMs = opts.intervalMs ?? 50;
  const waiting = new Map<string, { deadline: number; resolve: (run: Run | null) => void }[]>();
  let timer: NodeJS.Timeout | null = null;
  let count = 0;

  const tick = async () => {
    const now = Date.now();
    let statuses: Map<string, RunStatus>;
    try {
      statuses = await app.store.runs.statuses([...waiting.keys()]);
    } catch (err) {
      // The database refused a read: the waiting senders get their 202 (the run is stored).
      app.log.warn("could not read the status of waiting webhooks' runs; answering 202", { error: err });
      for (const id of [...waiting.keys()]) settle(id, null);
      timer = null;
      return;
    }
    for (const [id, list] of waiting) {
      const status = statuses.get(id);
      if (status && FINAL.has(status)) {
        settle(id, await app.store.runs.get(id).catch(() => null));
        continue;
      }
      const left = list.filter((w) => {
        if (w.deadline > now) return true;
        w.resolve(null);
        count--;
        return false;
      });
      if (left.length) waiting.set(id, left);
      else waiting.delete(id);
    }
    timer = null;
    schedule();
  };
  const settle = (id: string, run: Run | null) => {
    for (const w of waiting.get(id) ?? []) {
      w.resolve(run);
      count--;
    }
    waiting.delete(id);
  };
  const schedule = () => {
    // One tick at a time: the next is scheduled when this one has read and settled.
    if (!timer && waiting.size > 0) timer = setTimeout(() => void tick(), intervalMs).unref();
  };

  return {
    /** The finished run, or null when the wait ran out (or too many webhooks wait already). */
    wait(runId: string, timeoutMs: number): Promise<Run | null> {
      if (count >= MAX_WAITERS) return Promise.resolve(null);
      return new Promise((resolve) => {
        const list = waiting.get(runId) ?? [];
        list.push({ deadline: Date.now() + timeoutMs, resolve });
        waiting.set(runId, list);
        count++;
        schedule();
      });
    },
    waiting: () => count,
    close() {
      if (timer) clearTimeout(timer);
      timer = null;
      for (const id of [...waiting.keys()]) settle(id, null);
    },
  };
}

export type RunWaiter = ReturnType<typeof createRunWaiter>;

export interface WebhookResponse {
  status: number;
  contentType: string;
  body: string;
}

/**
 * The answer for a finished run. Succeeded or skipped: the configured status and body (a template
 * over `trigger`, `steps`, `vars`, `ai`, `run`; `steps.0` is the first action as before, `steps.<id>`
 * any step by its id); failed or dead: 502 with the run id and status only
 * (the error stays in the run log, for the owner). Steps are read as stored, so already redacted.
 */
export function renderWebhookResponse(config: RespondConfig, run: Run, trigger: unknown): WebhookResponse {
  if (run.status === "failed" || run.status === "dead") {
    return { status: 502, contentType: "application/json", body: JSON.stringify({ run_id: run.id, status: run.status }) };
  }
  const filter = run.steps.find((s) => s.kind === "filter");
  const transform = run.steps.find((s) => s.kind === "transform");
  const ctx = {
    trigger,
    steps: stepsScope(run.steps),
    vars: (filter?.output as { vars?: unknown } | undefined)?.vars ?? {},
    ai: (transform?.output as Record<string, unknown> | undefined) ?? {},
    run: { id: run.id, status: run.status, attempt: run.attempt },
  };
  const template = config.respond_body ?? `{"run_id":"{{run.id}}","status":"{{run.status}}"}`;
  // Stopped at the limit while rendering (characters), then cut to it in bytes: a template naming
  // a sender's field 500 times must not build the 450 MB it would make on the web process's loop.
  let body = renderTemplate(template, ctx, { maxLength: MAX_RESPONSE_BYTES }).value;
  if (Buffer.byteLength(body) > MAX_RESPONSE_BYTES) body = Buffer.from(body).subarray(0, MAX_RESPONSE_BYTES).toString("utf8");
  return { status: config.respond_status ?? 200, contentType: config.respond_content_type ?? "application/json", body };
}

/**
 * `steps` as a response template reads it: the actions in the order they ran (`steps.0.output`, as
 * before step lists), and every step recorded outside a for each by its id (`steps.lookup.output`).
 */
function stepsScope(steps: Run["steps"]): unknown {
  const view = (s: Run["steps"][number]) => ({ name: s.name, status: s.status, output: s.output ?? null });
  const list: unknown[] & Record<string, unknown> = steps.filter((s) => s.kind === "action").map(view) as unknown[] & Record<string, unknown>;
  for (const s of steps as (Run["steps"][number] & { id?: string; iteration?: unknown })[]) {
    if (typeof s.id === "string" && s.iteration === undefined && !/^\d+$/.test(s.id)) list[s.id] = view(s);
  }
  return list;
}
