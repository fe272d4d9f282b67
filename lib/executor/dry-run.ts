import type { App } from "../app";
import type { ActionPlugin, DryRunAnswer, DryRunRecord } from "../actions/types";
import type { Clock } from "../core/clock";
import { UserError } from "../core/errors";
import { localIso } from "../core/local-iso";
import { checkDefinition, timezoneOf } from "../definition";
import type { SafeFetch, SafeRequest, SafeResponse } from "../net/types";
import type { Sandbox } from "../sandbox";
import { REDACTED, createRedactor } from "../secrets/redact";
import { createTransformRunner } from "../transform";
import { createStepRunner } from "./step";
import type { Step } from "./types";
import { walkSteps, type TransformRunner, type WalkContext } from "./walk";

/**
 * "Test without sending": the applet's step list walked on one event exactly as a run would walk
 * it (the same walker, the same rendering, conditions, loops and filter code), with every effect
 * replaced by a recording, and nothing stored: no run row, no checkpoint, no file.
 *
 * Where the recording happens, and why there: an action that talks HTTP runs its own `run` with
 * `ctx.http` replaced by a recorder, so what is shown is the request its code really built
 * (method, URL, headers, body, the Idempotency-Key, every Discord or Telegram part), not a
 * description that could drift from it; the recorder answers with the service's success
 * (`dryRunAnswer`) so the action goes on as it would. An action whose effect is not HTTP (a note's
 * file, an email, an MQTT message, the Sheets client) has `dryRun`, which builds the same thing
 * with the same code and stops before the write or the connection. AI steps render and record
 * their request; their answer is empty. Timed actions and waits are shown and passed at once.
 *
 * Secrets: everything shown goes through the run's redactor (secret values, credential fields,
 * values an action registers), and request headers that carry credentials are hidden by name.
 */
export interface DryRunDeps {
  app: Pick<App, "clock" | "config" | "log" | "secrets">;
  actions: ReadonlyMap<string, ActionPlugin>;
  sandbox?: Sandbox;
}

export interface DryRunInput {
  applet: { id: string; name: string; definition: unknown };
  payload: Record<string, unknown>;
  /** Which event this is, shown with the result: a received one (its id, so the idempotency keys are the run's own), the trigger's sample, a fetch. */
  event: { id: string | null; source: string; received_at: string | null };
}

/** One request an action would have made. */
export interface RecordedRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: string | null;
}

/** What one action step would have done. */
export interface DryRunAction {
  step_id: string;
  iteration?: number[];
  place?: string;
  type: string;
  status: Step["status"];
  /** One line: "POST https://api.example.com/orders", "would create notes/a.md". */
  summary: string;
  /** HTTP actions: every request, in order. */
  requests?: RecordedRequest[];
  /** Actions with `dryRun`: what they would write or send. */
  record?: DryRunRecord;
  error?: string | null;
}

export interface DryRunResult {
  dry_run: true;
  event: DryRunInput["event"];
  /** How the run would end. */
  status: "succeeded" | "skipped" | "failed";
  reason: string | null;
  /** The journal the run would have, as the run page shows it (never stored). */
  steps: Step[];
  actions: DryRunAction[];
}

/** Header names whose values carry credentials: hidden whatever their value. */
const CREDENTIAL_HEADER = /^(authorization|proxy-authorization|cookie|x-api-key|x-gotify-key)$|token|secret|passw|signature|api[-_]?key|session/i;

const DEFAULT_ANSWER: DryRunAnswer = { status: 200, headers: { "content-type": "application/json" }, body: "{}" };

export async function dryRunApplet(deps: DryRunDeps, input: DryRunInput): Promise<DryRunResult> {
  const { app } = deps;
  const checked = checkDefinition(input.applet.definition);
  if (!checked.ok) throw new UserError("dry run: the applet definition is invalid", checked.problems.map((p) => ({ path: `definition.${p.path}`, message: p.message })));
  const def = checked.definition;
  const timezone = timezoneOf(def);
  const redactor = createRedactor();
  const secrets = await app.secrets.lookup();
  // A Discord or Telegram message in parts waits a second between parts: not in a dry run.
  const clock: Clock = { now: () => app.clock.now(), sleep: () => Promise.resolve() };

  // The requests made since the current action started, and the answer its service gives.
  let requests: RecordedRequest[] = [];
  let answer: ActionPlugin["dryRunAnswer"];
  const recorder: SafeFetch = async (url: string, init: SafeRequest = {}): Promise<SafeResponse> => {
    const method = (init.method ?? "GET").toUpperCase();
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(init.headers ?? {})) headers[k] = CREDENTIAL_HEADER.test(k) ? REDACTED : v;
    const body = init.body === undefined ? null : typeof init.body === "string" ? init.body : `(${init.body.byteLength} bytes of binary data)`;
    requests.push({ method, url, headers, body });
    const a = answer?.({ method, url }) ?? DEFAULT_ANSWER;
    const bytes = Buffer.from(a.body, "utf8");
    return { status: a.status, headers: a.headers ?? {}, body: bytes, text: () => a.body, truncated: false, url };
  };

  const actions = new Map<string, ActionPlugin>();
  for (const [type, plugin] of deps.actions) {
    actions.set(type, {
      ...plugin,
      async run(config, ctx) {
        if (plugin.dryRun) {
          const record = await plugin.dryRun(config, ctx);
          return { output: { dry_run: true, summary: record.summary, record } };
        }
        requests = [];
        answer = plugin.dryRunAnswer?.bind(plugin);
        try {
          const result = await plugin.run(config, ctx);
          const made = requests;
          return { output: { dry_run: true, summary: summaryOf(made), requests: made, answered_as: result.output } };
        } finally {
          answer = undefined;
        }
      },
    });
  }

  // The AI step renders its prompt and builds its request through the recorder; the answer is empty.
  const realTransform = createTransformRunner({ http: recorder, config: app.config, clock, log: app.log });
  const transform: TransformRunner = async (step, ctx, tz) => {
    requests = [];
    answer = () => ({ status: 200, headers: { "content-type": "application/json" }, body: JSON.stringify({ choices: [{ message: { content: "null" } }] }) });
    try {
      const t = await realTransform(step, ctx, tz);
      const made = requests;
      const warning = made.length ? "dry run: the AI request was recorded, not sent; its answer is empty here" : null;
      return { ...t, value: null, input: { ...(t.input as object), ...(made.length ? { dry_run_requests: made } : {}) }, warnings: warning ? [...t.warnings, warning] : t.warnings };
    } finally {
      answer = undefined;
    }
  };

  const eventId = input.event.id ?? "dry-run";
  const run = { id: "dry-run", attempt: 1, appletId: input.applet.id, eventId, replay: false, plannedRunId: null };
  const runner = createStepRunner({ attempt: 1, earlier: [], clock, redactor, save: () => true });
  const now = clock.now();
  const ctx: WalkContext = {
    trigger: input.payload,
    ai: {},
    vars: {},
    steps: {},
    applet: { id: input.applet.id, name: input.applet.name },
    run: { id: run.id, attempt: 1 },
    event: { id: eventId, source: input.event.source, received_at: input.event.received_at ?? now.toISOString() },
    now: now.toISOString(),
    secrets: (name) => {
      const value = secrets(name);
      if (value) redactor.add([value]);
      return value;
    },
  };
  Object.defineProperty(ctx, "now_local", { enumerable: true, get: () => localIso(now, timezone) });

  const log = app.log.child("dry-run");
  const end = await walkSteps(
    {
      app: { clock, config: app.config, http: recorder },
      actions,
      sandbox: deps.sandbox,
      transform,
      run,
      applet: { id: input.applet.id, name: input.applet.name },
      runner,
      redactor,
      log,
      timezone,
      dryRun: true,
    },
    def,
    ctx,
    null,
  );
  let status: DryRunResult["status"] = "succeeded";
  let reason: string | null = null;
  if (end?.kind === "finish") [status, reason] = [end.status, end.reason];
  else if (end?.kind === "failure") [status, reason] = ["failed", `${end.where}: ${end.error instanceof Error ? end.error.message : String(end.error)}`];

  // Redacted once more at the end: a secret learned by a later step is hidden in earlier ones too.
  const steps = redactor.redact(runner.steps);
  return { dry_run: true, event: input.event, status, reason: reason === null ? null : redactor.redact(reason), steps, actions: steps.filter((s) => s.kind === "action").map(actionOf) };
}

function summaryOf(requests: RecordedRequest[]): string {
  if (requests.length === 0) return "no request";
  const first = `${requests[0]!.method} ${requests[0]!.url}`;
  return requests.length === 1 ? first : `${first} and ${requests.length - 1} more`;
}

function actionOf(s: Step): DryRunAction {
  const out = (s.output ?? {}) as { summary?: string; requests?: RecordedRequest[]; record?: DryRunRecord };
  const summary = s.status === "skipped" ? `not run: ${s.why ?? "skipped"}` : s.status === "failed" ? `would fail: ${s.error ?? "failed"}` : (out.summary ?? "");
  return {
    step_id: s.id ?? s.kind,
    ...(s.iteration ? { iteration: s.iteration } : {}),
    ...(s.place ? { place: s.place } : {}),
    type: s.name,
    status: s.status,
    summary,
    ...(out.requests ? { requests: out.requests } : {}),
    ...(out.record ? { record: out.record } : {}),
    ...(s.error ? { error: s.error } : {}),
  };
}
