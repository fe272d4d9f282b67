import type { z } from "zod";
import type { FieldMeta, PluginContext } from "../plugin";

export type TriggerType = "webhook" | "schedule" | "rss" | "email" | "poll";

export interface Ingredient {
  name: string;
  description: string;
}

/** The poller's memory, one row per applet (table trigger_state). Only the scheduler writes it. */
export interface TriggerState {
  nextRunAt: string | null;
  lastPolledAt: string | null;
  /** Every key of the last successful fetch plus at most 500 older ones (the history), oldest first. */
  seenKeys: string[];
  lastValue: unknown;
  etag: string | null;
  lastModified: string | null;
  lastError: string | null;
  /** Consecutive failed polls (RSS backs off to 60 minutes after 3). */
  errorCount: number;
}

export interface NewEvent {
  /** Unique per applet: a second event with the same key is ignored. null: never deduped. */
  dedupeKey: string | null;
  payload: Record<string, unknown>;
}

export interface PollResult {
  /** In firing order (oldest first). */
  events: NewEvent[];
  /** Fields of trigger_state to write (nextRunAt is decided by the scheduler via `nextRunAt`). */
  state: Partial<Omit<TriggerState, "nextRunAt">>;
}

export interface PollContext extends PluginContext {
  /** Renders a template string (secrets available) for configs like poll headers. */
  render(template: string): Promise<string>;
  /**
   * A copy of `value` with every secret value rendered through this context so far replaced by
   * "[redacted]" (the value itself when none was). Whatever a poll stores, logs or returns goes
   * through it.
   */
  redact<T>(value: T): T;
}

export interface TriggerPlugin<C = Record<string, unknown>> {
  type: TriggerType;
  label: string;
  description: string;
  configSchema: z.ZodType<C>;
  fields: FieldMeta[];
  ingredients: Ingredient[];
  /** A realistic payload for "Send test event", Preview and Test filter. */
  sample: Record<string, unknown>;
  /** Polled triggers (schedule, rss, poll): the next time to poll after `from`. */
  nextRunAt?(config: C, from: Date, state: TriggerState): Date;
  /** Polled triggers: one poll, pure apart from `ctx.http`. The engine stores events and state. */
  poll?(config: C, state: TriggerState, ctx: PollContext, slot: Date): Promise<PollResult>;
  /** "Fetch now" in the editor: fetch without saving and describe what a poll would see. */
  preview?(config: C, ctx: PollContext): Promise<unknown>;
}

/** The state of an applet that has never been polled. */
export const emptyTriggerState = (): TriggerState => ({
  nextRunAt: null,
  lastPolledAt: null,
  seenKeys: [],
  lastValue: null,
  etag: null,
  lastModified: null,
  lastError: null,
  errorCount: 0,
});
