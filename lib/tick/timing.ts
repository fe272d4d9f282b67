import type { ScheduleTiming } from "@whenthen/schedules";
import { isPolledType, polledTrigger } from "../triggers";
import type { TriggerState } from "../triggers/types";


export { isPolledType };

/**
 * When an applet's trigger runs, in @whenthen/schedules' terms, taken from the plug-in's own timing
 * function: the reconciler's claim (`nextRunAfter(timing + slot, now)`) and the plug-in's
 * next run (lib/triggers `nextRunOf`) are the same computation, so next_run_at has one source.
 *
 * A stored config that no longer parses (edited in the database by hand) still gets the timing
 * its fields spell, when they spell one (the plug-in's `timingOfInvalid`): the poll then reports
 * the config problem in last_error. When they do not, the timing is invalid on purpose and the
 * reconciler disables the applet with "errored:invalid-schedule" instead of failing on every tick.
 */
/** The timing of an already parsed config (see `timingOf`). */
export function timingOfParsed(type: string, config: unknown, state: Pick<TriggerState, "errorCount">): ScheduleTiming {
  return polled(type).timing(config, state);
}

export function timingOf(type: string, rawConfig: unknown, state: Pick<TriggerState, "errorCount">): ScheduleTiming {
  const plugin = polled(type);
  const raw = (rawConfig ?? {}) as Record<string, unknown>;
  const parsed = plugin.configSchema.safeParse(raw);
  return parsed.success ? plugin.timing(parsed.data, state) : plugin.timingOfInvalid(raw);
}

function polled(type: string) {
  const plugin = polledTrigger(type);
  if (!plugin) throw new Error(`scheduler: trigger type "${type}" is not polled`);
  return plugin;
}
