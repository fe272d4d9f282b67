import type { JsonColumns } from "./json";
import type { TriggerState } from "./types/trigger-state";

/** A `trigger_state` row as both engines hand it back; JSON columns as JsonColumns says. */
export interface TriggerStateRaw {
  next_run_at: string | null;
  last_polled_at: string | null;
  seen_keys: unknown;
  last_value: unknown;
  etag: string | null;
  last_modified: string | null;
  last_error: string | null;
  error_count: number;
}

const parsed = (value: unknown, json: JsonColumns): unknown => (json === "text" ? JSON.parse(value as string) : value);

export const toTriggerState = (r: TriggerStateRaw, json: JsonColumns): TriggerState => ({
  nextRunAt: r.next_run_at,
  lastPolledAt: r.last_polled_at,
  seenKeys: parsed(r.seen_keys, json) as string[],
  lastValue: r.last_value === null || r.last_value === undefined ? null : parsed(r.last_value, json),
  etag: r.etag,
  lastModified: r.last_modified,
  lastError: r.last_error,
  errorCount: r.error_count,
});
