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
