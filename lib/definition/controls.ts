import { z } from "zod";
import type { IngestControls } from "../db/store/types";
import { renderTemplate } from "../template";

/**
 * Controls over runs, per applet (the definition's `controls`; docs/definition.md). Every part is
 * optional and its absence is today's behaviour: one run at a time, in order, every event its own
 * run, as fast as the worker goes.
 *
 * - concurrency: `in_order` (default); `parallel` with `max` lanes; `per_key`, one run at a time per
 *   rendered `key` template (different keys run side by side). The queue keeps one run running per
 *   (applet, lane) and claims each lane's runs in order (lib/db/store: the claim), so whatever the
 *   number of workers a run still runs exactly once. A key that renders empty puts its runs in the
 *   one empty key's lane.
 * - rate_limit: at most `max` runs start per `period_seconds`. Each run gets a start slot at ingest
 *   (no earlier than the `max`-th slot before it plus the period); `overflow: "wait"` queues it
 *   until its slot, in order, `"drop"` stores the event with a skipped run instead of waiting.
 * - debounce: the first event opens a window of `window_seconds`; the events that arrive within it
 *   join the run it opened, which starts when the window ends and sees the first, the last or all
 *   of them (`keep`; all: `{{trigger.events}}`, oldest first).
 * - order: `strict` keeps a run's lane while it waits at a wait step (see ORDERS).
 *
 * Pure: what the store needs at ingest (`ingestControls`) is computed here from the definition and
 * the event; the store's run-controls part does the bookkeeping in the event's transaction.
 */

export const MAX_WINDOW_SECONDS = 7 * 24 * 3600;
/** Lanes are index keys: a rendered key is cut to this many characters. */
export const MAX_KEY_LENGTH = 200;
export const MAX_PARALLEL = 100;

const seconds = (what: string) =>
  z
    .number({ error: `${what} must be a number of seconds` })
    .int(`${what} must be a whole number of seconds`)
    .min(1, `${what} must be at least 1 s`)
    .max(MAX_WINDOW_SECONDS, `${what} must be at most 7 days (${MAX_WINDOW_SECONDS} s)`);

export const concurrencySchema = z.discriminatedUnion(
  "mode",
  [
    z.strictObject({ mode: z.literal("in_order") }),
    z.strictObject({
      mode: z.literal("parallel"),
      max: z.number().int("must be a whole number").min(1, "must be at least 1").max(MAX_PARALLEL, `must be at most ${MAX_PARALLEL}`),
    }),
    z.strictObject({
      mode: z.literal("per_key"),
      key: z.string().trim().min(1, "a concurrency key template is required, e.g. {{trigger.body.customer_id}}").max(500),
    }),
  ],
  { error: (iss) => (iss.code === "invalid_union" ? "mode must be in_order, parallel or per_key" : undefined) },
);

export const rateLimitSchema = z.strictObject({
  max: z.number().int("must be a whole number").min(1, "must be at least 1").max(100_000, "must be at most 100000"),
  period_seconds: seconds("the period"),
  overflow: z.enum(["wait", "drop"]).default("wait"),
});

export const debounceSchema = z.strictObject({
  window_seconds: seconds("the window"),
  keep: z.enum(["first", "last", "all"]).default("all"),
});

/**
 * What a waiting run does to the runs behind it. `relaxed` (default): nothing, a waiting run is not
 * running, so later runs go. `strict`: it keeps its lane while it waits (the store's claim counts
 * it as running), so later runs stay queued, in order, until it has resumed and finished or was
 * cancelled. Strict order is per lane, so it means something only where a lane is one run at a
 * time in the order runs came: `in_order` and `per_key`, not `parallel`'s random lanes.
 */
export const ORDERS = ["relaxed", "strict"] as const;

export const controlsSchema = z
  .strictObject({
    concurrency: concurrencySchema.optional(),
    rate_limit: rateLimitSchema.optional(),
    debounce: debounceSchema.optional(),
    order: z.enum(ORDERS, { error: () => `must be ${ORDERS.join(" or ")}` }).optional(),
  })
  .superRefine((c, ctx) => {
    if (c.order === "strict" && c.concurrency?.mode === "parallel") {
      ctx.addIssue({
        code: "custom",
        path: ["order"],
        message:
          'strict order keeps later runs behind a waiting one in the order they came, which parallel lanes (runs spread at random) do not have: use concurrency "in_order" or "per_key" with it, or leave order out',
      });
    }
  });

export type RunControls = z.infer<typeof controlsSchema>;
export type Concurrency = z.infer<typeof concurrencySchema>;
export type RateLimit = z.infer<typeof rateLimitSchema>;
export type Debounce = z.infer<typeof debounceSchema>;

/** True when the controls change nothing (absent, or in order with no limit, no debounce and relaxed order). */
export function isDefaultControls(c: RunControls | undefined): boolean {
  return !c || (isDefaultIngest(c) && c.order !== "strict");
}

/** True when the controls change nothing at ingest (strict order acts only when a run waits). */
function isDefaultIngest(c: RunControls): boolean {
  return (!c.concurrency || c.concurrency.mode === "in_order") && !c.rate_limit && !c.debounce;
}

/** Whether a run of this applet that reaches a wait step keeps its lane while it waits. */
export function holdsLaneWhileWaiting(c: RunControls | undefined): boolean {
  return c?.order === "strict";
}

/** The rendered concurrency key: text, cut to MAX_KEY_LENGTH; '' when it renders empty. */
export function renderKey(template: string, payload: unknown): { key: string; warnings: string[] } {
  const r = renderTemplate(template, { trigger: payload }, { maxLength: MAX_KEY_LENGTH });
  return { key: r.value.trim().slice(0, MAX_KEY_LENGTH), warnings: r.warnings };
}

/**
 * The lane of a new run. `pick` chooses among N parallel lanes (injected: tests pass a fixed one;
 * the default spreads runs evenly at random).
 */
export function laneOf(c: RunControls | undefined, payload: unknown, pick: (n: number) => number = (n) => Math.floor(Math.random() * n)): string {
  const conc = c?.concurrency;
  if (!conc || conc.mode === "in_order") return "";
  if (conc.mode === "parallel") return conc.max === 1 ? "" : `p:${pick(conc.max)}`;
  return `k:${renderKey(conc.key, payload).key}`;
}

/** What the store needs for this event; undefined for default controls (the hot path is untouched). */
export function ingestControls(c: RunControls | undefined, payload: unknown): IngestControls | undefined {
  if (!c || isDefaultIngest(c)) return undefined;
  return {
    lane: laneOf(c, payload),
    ...(c.rate_limit ? { rate: { max: c.rate_limit.max, periodMs: c.rate_limit.period_seconds * 1000, overflow: c.rate_limit.overflow } } : {}),
    ...(c.debounce ? { debounceMs: c.debounce.window_seconds * 1000 } : {}),
  };
}

/** Warnings to show beside the controls when they are saved, checked against a sample event (`trigger`). */
export function controlsWarnings(c: RunControls | undefined, sample: unknown): { path: string; message: string }[] {
  const conc = c?.concurrency;
  if (!conc || conc.mode !== "per_key" || sample === undefined || sample === null) return [];
  const { key, warnings } = renderKey(conc.key, sample);
  if (key !== "") return [];
  const why = warnings.length ? ` (${warnings[0]})` : "";
  return [{ path: "controls.concurrency.key", message: `renders empty for the sample event${why}: every run whose key is empty shares one lane and runs one at a time` }];
}

/** The trigger a debounced run sees: the kept event's payload, and with `all` every event as `events`. */
export function debouncedTrigger(keep: Debounce["keep"], events: Record<string, unknown>[]): Record<string, unknown> {
  const first = events[0] ?? {};
  const last = events[events.length - 1] ?? first;
  if (keep === "first") return first;
  if (keep === "last") return last;
  return { ...last, events };
}
