import type { ScheduleTiming } from "@whenthen/schedules";
import { toText } from "../core/text";
import { POLLED_TRIGGERS } from "../triggers";
import { POLL_DEFAULT_INTERVAL_MIN, pollConfigSchema, pollTiming, type PollConfig } from "../triggers/poll";
import { RSS_DEFAULT_INTERVAL_MIN, rssConfigSchema, rssTiming, type RssConfig } from "../triggers/rss";
import { scheduleConfigSchema, scheduleTiming, type ScheduleConfig } from "../triggers/schedule";
import type { TriggerState } from "../triggers/types";

export type PolledTriggerType = (typeof POLLED_TRIGGERS)[number];

export const isPolledType = (type: string): type is PolledTriggerType => (POLLED_TRIGGERS as readonly string[]).includes(type);

/**
 * When an applet's trigger runs, in @whenthen/schedules' terms, taken from the plug-in's own timing
 * function: the reconciler's claim (`nextRunAfter(timing + slot, now)`) and the plug-in's
 * `nextRunAt(config, now, state)` are the same computation, so next_run_at has one source.
 *
 * A stored config that no longer parses (edited in the database by hand) still gets the timing
 * its fields spell, when they spell one: the poll then reports the config problem in last_error.
 * When they do not, the timing is invalid on purpose and the reconciler disables the applet with
 * "errored:invalid-schedule" instead of failing on every tick.
 */
/** The timing of an already parsed config (see `timingOf`). */
export function timingOfParsed(type: PolledTriggerType, config: unknown, state: Pick<TriggerState, "errorCount">): ScheduleTiming {
  switch (type) {
    case "schedule":
      return scheduleTiming(config as ScheduleConfig);
    case "rss":
      return rssTiming(config as RssConfig, state);
    case "poll":
      return pollTiming(config as PollConfig);
  }
}

export function timingOf(type: PolledTriggerType, rawConfig: unknown, state: Pick<TriggerState, "errorCount">): ScheduleTiming {
  const raw = (rawConfig ?? {}) as Record<string, unknown>;
  switch (type) {
    case "schedule": {
      const parsed = scheduleConfigSchema.safeParse(raw);
      return parsed.success ? scheduleTiming(parsed.data) : { cron: String(raw.cron), timezone: typeof raw.timezone === "string" ? raw.timezone : undefined };
    }
    case "rss": {
      const parsed = rssConfigSchema.safeParse(raw);
      return parsed.success ? rssTiming(parsed.data, state) : { interval: `${toText(raw.interval_min ?? RSS_DEFAULT_INTERVAL_MIN)}m` };
    }
    case "poll": {
      const parsed = pollConfigSchema.safeParse(raw);
      return parsed.success ? pollTiming(parsed.data) : { interval: `${toText(raw.interval_min ?? POLL_DEFAULT_INTERVAL_MIN)}m` };
    }
  }
}
