/**
 * The messages between the sandbox pool (index.ts, main thread) and its worker threads
 * (worker.mjs, type-checked through JSDoc against these types). Types only: the worker is plain
 * JavaScript and imports nothing from here at run time.
 */
/** What one filter run gives back (the pool hands it to the executor as it is). */
export interface FilterResult {
  /** What the filter set: JSON data only (functions and undefined dropped), safe to structured-clone. */
  vars: Record<string, unknown>;
  /** console.* lines: at most 100, each at most 1 KB; cut lines end with "…[truncated]" and a
   * final marker line replaces line 100 when more were logged. */
  logs: string[];
  skipped: boolean;
  reason?: string;
  /** Set when the filter threw, had a syntax error, timed out or ran out of memory: the message
   * and the line number, e.g. "TypeError: cannot read property 'x' of undefined (line 3)". The
   * caller marks the run failed without retry. */
  error?: string;
  duration_ms: number;
}

/** Main thread → worker: run one filter. */
export interface RunMessage {
  type: "run";
  id: number;
  code: string;
  /** The trigger payload and the applet, already serialized (the worker parses them inside QuickJS). */
  triggerJson: string;
  appletJson: string;
  /** The other globals (`steps`, `ai`, `item`, `index`) and the `vars` set so far, as one JSON object. */
  contextJson: string;
  timeoutMs: number;
  memoryBytes: number;
}

/** Worker → main thread: loaded and able to take a run. */
export interface ReadyMessage {
  type: "ready";
}

/** Worker → main thread: the answer to the run with the same id. */
export interface ResultMessage {
  type: "result";
  id: number;
  /** The worker hit a host-side defect and exits after this answer; the pool replaces it. */
  fatal?: boolean;
  result: FilterResult;
}

export type WorkerMessage = ReadyMessage | ResultMessage;
