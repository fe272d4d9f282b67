// @ts-check
// Filter-code sandbox worker. Plain ESM JavaScript on purpose: a worker thread does not inherit
// the tsx / vitest loaders reliably, and Node loads a .mjs file natively under both. It is
// type-checked all the same (tsconfig.json includes it with checkJs; the types are JSDoc, the
// messages are those of protocol.ts).
//
// Isolation model: the filter runs inside QuickJS compiled to WebAssembly. Nothing from this
// thread is reachable from inside except the two host functions below (log and skip), which only
// ever receive strings. Every run gets a fresh QuickJS runtime + context, so nothing a filter does
// (prototype pollution, globals, pending promises) survives into the next run.
import { parentPort } from "node:worker_threads";
import { performance } from "node:perf_hooks";
import { newQuickJSWASMModule, RELEASE_SYNC } from "quickjs-emscripten";

/**
 * @import { QuickJSContext, QuickJSHandle, QuickJSRuntime } from "quickjs-emscripten"
 * @import { FilterResult } from "./protocol"
 * @import { RunMessage, WorkerMessage } from "./protocol"
 */

/**
 * What one run keeps on the host side while the filter runs.
 * @typedef {object} RunState
 * @property {string[]} logs
 * @property {number} droppedLogs log lines past the cap, counted instead of kept
 * @property {boolean} skipped
 * @property {string | undefined} reason
 * @property {boolean} stop set by skip(): the interrupt handler ends the filter at its next check
 * @property {boolean} timedOut
 * @property {"user" | "describe"} phase whose time the deadline measures: the filter's, or reading its error back
 * @property {number} deadline performance.now() past which the interrupt handler stops the VM
 * @property {boolean} unhandled set when `thrown` is a rejection no code handled rather than a throw
 */

// A worker thread always has a parent port; without one this file was run as a script by mistake.
if (!parentPort) throw new Error("sandbox worker: no parentPort, run this file as a worker thread (lib/sandbox/index.ts)");
const port = parentPort;

/** QuickJS's own stack cap. Measured: with a 4 MB thread stack, 1 MB lets deep JSON.parse
 * recursion overflow V8's stack inside the WASM (which would corrupt the module); 256 KB leaves a
 * wide margin and still allows a few thousand frames of ordinary recursion. */
const QUICKJS_STACK_BYTES = 256 * 1024;
/** Time and memory granted to read an error back out of the VM after the filter itself failed:
 * reading may need to run a getter, and an out-of-memory error leaves the heap at the limit. */
const DESCRIBE_GRACE_MS = 100;
const DESCRIBE_EXTRA_MEMORY_BYTES = 4 * 1024 * 1024;

const MAX_LOG_LINES = 100;
const MAX_LOG_LINE_BYTES = 1024;
const MAX_REASON_BYTES = 1024;
const MAX_ERROR_BYTES = 2048;
const TRUNCATED_MARK = " …[truncated]";

// Runs before the filter, in strict mode, and keeps private references to the builtins it uses,
// so a filter that later replaces JSON.stringify or Reflect.apply cannot change how vars are
// copied out. Whatever a filter does to these helpers only affects its own output: the host
// checks every value it receives.
//
// Unhandled rejections. QuickJS as built here tells the host of none, so the prelude tracks the
// promises made through the Promise API (new Promise; Promise.reject and the other statics, which
// are inherited and build through the constructor they are called on; every .then/.catch/.finally),
// and one still rejected without a reaction once the jobs have run fails the filter, as it would
// crash a Node process. Promise.prototype.constructor is the tracking constructor, so await,
// Promise.all and returning a promise reach a promise through .then and count as handling it.
// watchUnhandled (called by the host after the jobs) puts a reaction on every unhandled tracked
// promise and answers how many (almost always 0); the jobs then run once more and firstUnhandled
// answers [found, reason]. Not seen: the promise of an async function nobody awaits (QuickJS makes
// it without any call the prelude could observe). At most MAX_TRACKED promises are kept, so an
// endless promise chain still ends on its deadline rather than on memory. Comments stay out of the
// prelude's text: it is compiled again for every run.
const PRELUDE = `(function (hostLog, hostSkip, triggerJson, appletJson, contextJson) {
  "use strict";
  const g = globalThis;
  const stringify = JSON.stringify, parse = JSON.parse, apply = Reflect.apply;
  const defineProperty = Object.defineProperty, freeze = Object.freeze;
  const StringCtor = String, ErrorCtor = Error, TypeErrorCtor = TypeError;
  const slice = String.prototype.slice;
  const MAX_PIECE = ${MAX_LOG_LINE_BYTES + 64};
  const vars = {};
  const SKIP = freeze({ name: "Skip", message: "skip() was called" });

  function text(value) {
    switch (typeof value) {
      case "string": return value;
      case "undefined": return "undefined";
      case "function": return "[Function]";
      case "symbol": case "bigint": case "number": case "boolean": return StringCtor(value);
    }
    if (value === null) return "null";
    if (value instanceof ErrorCtor) return StringCtor(value.name) + ": " + StringCtor(value.message);
    try {
      const json = stringify(value);
      return json === undefined ? StringCtor(value) : json;
    } catch (_) {
      return "[unserializable object]";
    }
  }
  function log() {
    let line = "";
    for (let i = 0; i < arguments.length; i++) {
      let piece = text(arguments[i]);
      if (piece.length > MAX_PIECE) piece = apply(slice, piece, [0, MAX_PIECE]);
      line += (i === 0 ? "" : " ") + piece;
      if (line.length > MAX_PIECE) break;
    }
    hostLog(line);
  }
  function skip(reason) {
    hostSkip(reason === undefined ? undefined : text(reason));
    throw SKIP;
  }
  function set(key, value) {
    if (typeof key === "number") key = StringCtor(key);
    if (typeof key !== "string" || key === "") throw new TypeErrorCtor("set(key, value): key must be a non-empty string");
    if (key === "__proto__") throw new TypeErrorCtor('set(key, value): "__proto__" is not allowed as a key');
    const json = stringify(value);
    if (json === undefined) { delete vars[key]; return; }
    defineProperty(vars, key, { value: parse(json), writable: true, enumerable: true, configurable: true });
  }
  function readString(read) {
    try {
      const value = read();
      return typeof value === "string" ? value : value === undefined ? "" : StringCtor(value);
    } catch (_) {
      return "";
    }
  }
  // Returns [isError, name, message, stack, text] as own array elements, which the host can read
  // without touching any prototype the filter may have changed.
  function describe(thrown) {
    if (thrown !== null && (typeof thrown === "object" || typeof thrown === "function")) {
      let isError = false;
      try { isError = thrown instanceof ErrorCtor; } catch (_) { isError = false; }
      return [isError, readString(() => thrown.name), readString(() => thrown.message), readString(() => thrown.stack),
        isError ? "" : readString(() => stringify(thrown))];
    }
    return [false, "", "", "", readString(() => StringCtor(thrown))];
  }
  const NativePromise = g.Promise;
  const promiseProto = NativePromise.prototype;
  const nativeThen = promiseProto.then;
  const construct = Reflect.construct, setPrototypeOf = Object.setPrototypeOf;
  const MAX_TRACKED = 10000;
  const tracked = [];
  const handled = new WeakSet();
  const unhandledReasons = [];
  const track = (p) => {
    if (tracked.length < MAX_TRACKED && p !== null && typeof p === "object") tracked[tracked.length] = p;
    return p;
  };
  function Promise(executor) {
    if (new.target === undefined) throw new TypeErrorCtor("Promise constructor cannot be invoked without 'new'");
    return track(construct(NativePromise, [executor], new.target === Promise ? NativePromise : new.target));
  }
  Promise.prototype = promiseProto;
  setPrototypeOf(Promise, NativePromise);
  defineProperty(promiseProto, "constructor", { value: Promise, writable: true, configurable: true });
  defineProperty(promiseProto, "then", {
    value: function then(onFulfilled, onRejected) {
      handled.add(this);
      return track(apply(nativeThen, this, [onFulfilled, onRejected]));
    },
    writable: true,
    configurable: true,
  });
  function watchUnhandled() {
    let watching = 0;
    for (let i = 0; i < tracked.length; i++) {
      const p = tracked[i];
      if (handled.has(p)) continue;
      try {
        apply(nativeThen, p, [undefined, (reason) => { unhandledReasons[unhandledReasons.length] = reason; }]);
        watching++;
      } catch (_) {}
    }
    return watching;
  }
  const firstUnhandled = () => (unhandledReasons.length ? [true, unhandledReasons[0]] : [false, undefined]);

  const console = freeze({ log, info: log, warn: log, error: log, debug: log });
  const define = (name, value, writable) => defineProperty(g, name, { value, writable, enumerable: false, configurable: writable });
  define("trigger", parse(triggerJson), true);
  define("applet", parse(appletJson), true);
  const context = parse(contextJson);
  const earlierVars = context.vars;
  if (earlierVars !== null && typeof earlierVars === "object") {
    const keys = Object.keys(earlierVars);
    for (let i = 0; i < keys.length; i++) if (keys[i] !== "__proto__") defineProperty(vars, keys[i], { value: earlierVars[keys[i]], writable: true, enumerable: true, configurable: true });
  }
  const names = ["steps", "ai", "item", "index"];
  for (let i = 0; i < names.length; i++) if (Object.prototype.hasOwnProperty.call(context, names[i])) define(names[i], context[names[i]], true);
  // vars is the object set() writes to; making the binding read-only keeps "vars = {...}" from
  // silently detaching it from what the host reads back.
  define("vars", vars, false);
  define("skip", skip, true);
  define("set", set, true);
  define("console", console, true);
  define("Promise", Promise, true);
  return { collect: () => stringify(vars), describe, watchUnhandled, firstUnhandled };
})`;

const QuickJS = await newQuickJSWASMModule(RELEASE_SYNC);

/**
 * Cuts a string to at most maxBytes of UTF-8, marking the cut, without splitting a character.
 * @param {string} value
 * @param {number} maxBytes
 * @returns {string}
 */
function capBytes(value, maxBytes) {
  if (value.length <= maxBytes / 3 || Buffer.byteLength(value, "utf8") <= maxBytes) return value;
  const room = maxBytes - Buffer.byteLength(TRUNCATED_MARK, "utf8");
  const bytes = Buffer.from(value.slice(0, room), "utf8").subarray(0, room);
  // Decoding a cut multi-byte sequence yields U+FFFD at the end; drop it.
  return bytes.toString("utf8").replace(/\uFFFD+$/u, "") + TRUNCATED_MARK;
}

/** @param {QuickJSHandle | undefined} handle */
function disposeQuietly(handle) {
  // ctx.null / ctx.undefined are static handles that must not be disposed.
  if (handle && handle.alive && handle.dupable !== false) {
    try {
      handle.dispose();
    } catch {
      // Static lifetimes throw on dispose; nothing to free.
    }
  }
}

/**
 * The line in the user's code. The wrapper puts nothing before line 1, but it closes on a line of
 * its own, so an error found at the end of the input (an unclosed brace, call or comment) is
 * reported past the user's last line: that is the user's last non-blank line.
 * @param {string} stack
 * @param {string} code
 * @returns {number | undefined}
 */
function lineOf(stack, code) {
  const match = /filter\.js:(\d+)/.exec(stack);
  if (!match) return undefined;
  const line = Number(match[1]);
  const lines = String(code).split("\n");
  let last = lines.length;
  while (last > 1 && (lines[last - 1] ?? "").trim() === "") last--;
  return Math.min(line, last);
}

/** Set-up time a run may take on top of its deadline; below the main thread's backstop grace (500 ms). */
const SETUP_GRACE_MS = 400;

/**
 * The first line at or after `from` with a loop (`while`, `for`, `do`) outside a // comment, or
 * `from` itself when there is none (a regular expression that backtracks for ever has no loop).
 */
/**
 * @param {string} code
 * @param {number} from
 * @returns {number}
 */
function loopLineFrom(code, from) {
  const lines = String(code).split("\n");
  for (let i = from - 1; i < lines.length; i++) {
    const text = (lines[i] ?? "").replace(/\/\/.*$/, "");
    if (/(^|[^\w$.])(while|for|do)\b/.test(text)) return i + 1;
  }
  return from;
}

/**
 * One filter run. Throws only on a host-side defect (for example the WASM module itself failing);
 * every outcome of the filter code is a returned result.
 * @param {RunMessage} job
 * @returns {FilterResult}
 */
function runFilter(job) {
  const started = performance.now();
  /** @type {RunState} */
  const state = {
    logs: [],
    droppedLogs: 0,
    skipped: false,
    reason: undefined,
    stop: false,
    timedOut: false,
    phase: "user",
    // Setting up the VM (the prelude, loading the trigger) is not the filter's time: on a thread
    // just started on a busy machine it can take longer than a short deadline. It gets the grace the
    // main thread's backstop allows; the filter's own deadline starts when its code does (runUserCode).
    deadline: started + job.timeoutMs + SETUP_GRACE_MS,
    /** Set when `thrown` is a rejection no code handled rather than a throw. */
    unhandled: false,
  };
  const runtime = newRuntime(job, state);
  const ctx = runtime.newContext();
  /** @type {QuickJSHandle[]} */
  const owned = [];
  /** @type {Own} */
  const own = (handle) => {
    owned.push(handle);
    return handle;
  };
  /** @type {QuickJSHandle | undefined} what the filter threw, if anything */
  let thrown;
  /** @type {Record<string, unknown>} */
  let vars = {};
  try {
    const api = loadPrelude(ctx, state, job, own);
    if (api.error) {
      // A trigger too large for the memory limit fails here, before any filter code ran.
      thrown = api.error;
    } else {
      own(api.value);
      /** @type {PreludeHelpers} */
      const helpers = {
        collect: own(ctx.getProp(api.value, "collect")),
        describe: own(ctx.getProp(api.value, "describe")),
        watchUnhandled: own(ctx.getProp(api.value, "watchUnhandled")),
        firstUnhandled: own(ctx.getProp(api.value, "firstUnhandled")),
      };
      thrown = runUserCode(runtime, ctx, state, job, helpers, own);

      // Read vars back unless the filter already failed. A skipped run still reports what it set,
      // for the editor's "Test filter" view.
      if ((!thrown || state.skipped) && !state.timedOut) {
        const collected = collectVars(ctx, state, helpers.collect);
        if (collected.error) thrown = collected.error;
        else if (collected.vars) vars = collected.vars;
      }

      if (!state.skipped && (thrown || state.timedOut)) {
        return finish(started, state, vars, describeFailure(runtime, ctx, state, job, helpers.describe, thrown));
      }
    }
    if (!state.skipped && thrown) {
      // Only reached when the prelude itself failed (trigger too large): describe without helpers.
      return finish(started, state, vars, preludeFailure(ctx, job, thrown));
    }
    return finish(started, state, vars, undefined);
  } finally {
    disposeQuietly(thrown);
    for (const handle of owned.reverse()) disposeQuietly(handle);
    ctx.dispose();
    runtime.dispose();
  }
}

/**
 * Keeps a handle alive until the run ends (runFilter disposes every owned handle, newest first).
 * @typedef {(handle: QuickJSHandle) => QuickJSHandle} Own
 */

/**
 * The prelude's functions the host calls after the filter (see PRELUDE).
 * @typedef {object} PreludeHelpers
 * @property {QuickJSHandle} collect
 * @property {QuickJSHandle} describe
 * @property {QuickJSHandle} watchUnhandled
 * @property {QuickJSHandle} firstUnhandled
 */

/**
 * A fresh QuickJS runtime with the run's limits: its memory, its stack, and the interrupt handler
 * that enforces the deadline and ends the filter after skip().
 * @param {RunMessage} job
 * @param {RunState} state
 * @returns {QuickJSRuntime}
 */
function newRuntime(job, state) {
  const runtime = QuickJS.newRuntime();
  runtime.setMemoryLimit(job.memoryBytes);
  runtime.setMaxStackSize(QUICKJS_STACK_BYTES);
  runtime.setInterruptHandler(() => {
    // After skip() the filter is over, even if it caught the sentinel and carried on.
    if (state.stop) return true;
    if (performance.now() > state.deadline) {
      if (state.phase === "user") state.timedOut = true;
      return true;
    }
    return false;
  });
  return runtime;
}

/**
 * The two host functions the filter can reach (through the prelude's console.* and skip()), then
 * the prelude run with them, which defines the filter's globals. Both host functions only ever
 * read strings, and cap what they keep.
 * @param {QuickJSContext} ctx
 * @param {RunState} state
 * @param {RunMessage} job
 * @param {Own} own
 */
function loadPrelude(ctx, state, job, own) {
  const hostLog = own(
    ctx.newFunction("log", (lineHandle) => {
      if (state.logs.length >= MAX_LOG_LINES) {
        state.droppedLogs += 1;
        return;
      }
      const line = lineHandle && ctx.typeof(lineHandle) === "string" ? ctx.getString(lineHandle) : "";
      state.logs.push(capBytes(line, MAX_LOG_LINE_BYTES));
    }),
  );
  const hostSkip = own(
    ctx.newFunction("skip", (reasonHandle) => {
      state.skipped = true;
      state.stop = true;
      if (reasonHandle && ctx.typeof(reasonHandle) === "string") {
        state.reason = capBytes(ctx.getString(reasonHandle), MAX_REASON_BYTES);
      }
    }),
  );
  const prelude = own(ctx.unwrapResult(ctx.evalCode(PRELUDE, "sandbox-prelude.js", { type: "global", strict: true })));
  const inputs = [job.triggerJson, job.appletJson, job.contextJson ?? "{}"].map((json) => own(ctx.newString(json)));
  return ctx.callFunction(prelude, ctx.undefined, hostLog, hostSkip, ...inputs);
}

/**
 * Compiles and runs the filter under its deadline, then its promise jobs, then the checks of a
 * rejected result and of rejections nobody handled. Answers what the filter threw, if anything;
 * a time-out or skip() is in `state`.
 * @param {QuickJSRuntime} runtime
 * @param {QuickJSContext} ctx
 * @param {RunState} state
 * @param {RunMessage} job
 * @param {PreludeHelpers} helpers
 * @param {Own} own
 * @returns {QuickJSHandle | undefined}
 */
function runUserCode(runtime, ctx, state, job, helpers, own) {
  // The wrapper keeps line numbers (it adds nothing before line 1's code) and lets a filter
  // end early with "return". Global (script) code: import statements are a syntax error and
  // no module loader is installed, so import() rejects.
  const wrapped = `(function () {${job.code}\n})()`;
  state.deadline = performance.now() + job.timeoutMs;
  const evaluated = ctx.evalCode(wrapped, "filter.js", { type: "global" });
  if (evaluated.error) return evaluated.error;
  const value = own(evaluated.value);
  // Promise callbacks are filter code too: run them under the same deadline.
  const thrown = runPendingJobs(runtime, state);
  // A native call (a big sort) does not check the interrupt; a filter that overran its
  // deadline inside one still failed, even if it then finished.
  if (!thrown && !state.skipped && performance.now() > state.deadline) state.timedOut = true;
  if (thrown || state.stop || state.timedOut) return thrown;
  // A filter that returns a promise (an async main) fails when that promise rejects.
  const settled = ctx.getPromiseState(value);
  if (settled.type === "rejected") return settled.error;
  if (settled.type === "fulfilled" && settled.value !== value) disposeQuietly(settled.value);
  // A rejection nobody handled (Promise.reject(x) on a line of its own) fails it too.
  return unhandledRejection(runtime, ctx, state, helpers);
}

/**
 * Runs the filter's pending promise jobs until none is left, it threw, skip() was called or the
 * deadline passed. Answers what a job threw, if anything.
 * @param {QuickJSRuntime} runtime
 * @param {RunState} state
 * @returns {QuickJSHandle | undefined}
 */
function runPendingJobs(runtime, state) {
  /** @type {QuickJSHandle | undefined} */
  let thrown;
  while (!thrown && !state.stop && !state.timedOut && runtime.hasPendingJob()) {
    if (performance.now() > state.deadline) {
      state.timedOut = true;
      break;
    }
    const jobs = runtime.executePendingJobs(64);
    if (jobs.error) thrown = jobs.error;
  }
  return thrown;
}

/**
 * The first rejection no code handled, through the prelude's watchUnhandled and firstUnhandled
 * (see PRELUDE); `state.unhandled` says the answer is one. Answers what was thrown, if anything.
 * @param {QuickJSRuntime} runtime
 * @param {QuickJSContext} ctx
 * @param {RunState} state
 * @param {PreludeHelpers} helpers
 * @returns {QuickJSHandle | undefined}
 */
function unhandledRejection(runtime, ctx, state, helpers) {
  const watched = ctx.callFunction(helpers.watchUnhandled, ctx.undefined);
  if (watched.error) return watched.error;
  const watching = ctx.typeof(watched.value) === "number" ? ctx.getNumber(watched.value) : 0;
  disposeQuietly(watched.value);
  const thrown = runPendingJobs(runtime, state);
  if (watching === 0 || thrown || state.stop || state.timedOut) return thrown;
  const first = ctx.callFunction(helpers.firstUnhandled, ctx.undefined);
  if (first.error) return first.error;
  const found = ctx.getProp(first.value, 0);
  const reason = ctx.dump(found) === true ? ctx.getProp(first.value, 1) : undefined;
  if (reason) state.unhandled = true;
  disposeQuietly(found);
  disposeQuietly(first.value);
  return reason;
}

/**
 * What the filter set, copied out as JSON through the prelude's collect. A failure to copy is the
 * filter's error (`error`), except after skip(), where it is let go and `vars` is left out.
 * @param {QuickJSContext} ctx
 * @param {RunState} state
 * @param {QuickJSHandle} collect
 * @returns {{ vars?: Record<string, unknown>, error?: QuickJSHandle }}
 */
function collectVars(ctx, state, collect) {
  state.stop = false;
  const collected = ctx.callFunction(collect, ctx.undefined);
  if (collected.error) {
    if (!state.skipped) return { error: collected.error };
    disposeQuietly(collected.error);
    return {};
  }
  const json = ctx.typeof(collected.value) === "string" ? ctx.getString(collected.value) : "{}";
  disposeQuietly(collected.value);
  // "__proto__" keys are dropped so that a consumer merging vars into another object
  // cannot have its prototype replaced by filter output.
  /** @type {unknown} */
  const parsed = JSON.parse(json, (key, /** @type {unknown} */ v) => (key === "__proto__" ? undefined : v));
  return { vars: parsed !== null && typeof parsed === "object" && !Array.isArray(parsed) ? /** @type {Record<string, unknown>} */ (parsed) : {} };
}

/**
 * The error of a run whose prelude failed (the trigger could not be loaded), read without the
 * prelude's helpers.
 * @param {QuickJSContext} ctx
 * @param {RunMessage} job
 * @param {QuickJSHandle} thrown
 * @returns {string}
 */
function preludeFailure(ctx, job, thrown) {
  /** @type {unknown} */
  const details = ctx.dump(thrown);
  // `details && details.message`, read without trusting its shape.
  /** @type {unknown} */
  const message = details !== null && typeof details === "object" ? /** @type {{ message?: unknown }} */ (details).message : details ? undefined : details;
  const oom = message === "out of memory";
  return oom ? `filter: out of memory (${job.memoryBytes / 1048576} MB limit) while loading the trigger` : `filter: could not load the trigger: ${String(message)}`;
}

/**
 * The run's error as the user reads it: what was thrown (read back through the prelude's
 * `describe`, which touches no prototype the filter may have changed), or the limit it hit.
 * @param {QuickJSRuntime} runtime
 * @param {QuickJSContext} ctx
 * @param {RunState} state
 * @param {RunMessage} job
 * @param {QuickJSHandle} describe
 * @param {QuickJSHandle | undefined} thrown
 * @returns {string}
 */
function describeFailure(runtime, ctx, state, job, describe, thrown) {
  const limitMb = job.memoryBytes / 1048576;
  /** @type {[isError: boolean, name: string, message: string, stack: string, text: string] | undefined} */
  let parts;
  if (thrown) {
    // A short, separate budget: the filter's own time may be used up, and an out-of-memory error
    // needs a little headroom to be read at all.
    state.phase = "describe";
    state.stop = false;
    state.deadline = performance.now() + DESCRIBE_GRACE_MS;
    runtime.setMemoryLimit(job.memoryBytes + DESCRIBE_EXTRA_MEMORY_BYTES);
    const described = ctx.callFunction(describe, ctx.undefined, thrown);
    if (described.error) disposeQuietly(described.error);
    else {
      const array = described.value;
      // Each element is read by its expected type only: anything else reads as false or "".
      /** @type {(index: number) => boolean} */
      const readFlag = (index) => {
        const item = ctx.getProp(array, index);
        const value = ctx.typeof(item) === "boolean" && ctx.dump(item) === true;
        disposeQuietly(item);
        return value;
      };
      /** @type {(index: number) => string} */
      const readText = (index) => {
        const item = ctx.getProp(array, index);
        const value = ctx.typeof(item) === "string" ? ctx.getString(item) : "";
        disposeQuietly(item);
        return value;
      };
      parts = [readFlag(0), readText(1), readText(2), readText(3), readText(4)];
      disposeQuietly(array);
    }
  }
  const [isError, name, message, stack, text] = parts ?? [false, "", "", "", ""];
  const found = lineOf(stack, job.code);
  // An interrupt is reported at the start of the function it stopped, not at the statement: the
  // wrapper's line 1 for a top-level `while (true) {}` on line 2. The loop that ran out the clock
  // is the first one from there on.
  const line = state.timedOut && found !== undefined ? loopLineFrom(job.code, found) : found;
  const at = line === undefined ? "" : ` (line ${line})`;
  let error;
  if (state.timedOut) error = `filter: timed out after ${job.timeoutMs} ms${at}`;
  else if (name === "InternalError" && message === "out of memory") error = `filter: out of memory (${limitMb} MB limit)${at}`;
  else if (state.unhandled) error = `unhandled promise rejection: ${isError ? `${name || "Error"}: ${message}` : parts ? text : "(unreadable)"}${at}`;
  else if (isError) error = `${name || "Error"}: ${message}${at}`;
  else if (parts) error = `filter threw a non-Error value: ${text}${at}`;
  else error = "filter: failed, and the error could not be read";
  return capBytes(error, MAX_ERROR_BYTES);
}

/**
 * @param {number} started performance.now() when the run began
 * @param {RunState} state
 * @param {Record<string, unknown>} vars
 * @param {string | undefined} error
 * @returns {FilterResult}
 */
function finish(started, state, vars, error) {
  const logs = state.logs;
  if (state.droppedLogs > 0) {
    // Keep the total at the cap: the last line becomes the marker that says what was dropped.
    const dropped = state.droppedLogs + 1;
    logs[MAX_LOG_LINES - 1] = `…[${dropped} more log line${dropped === 1 ? "" : "s"} dropped: the log keeps ${MAX_LOG_LINES - 1} lines]`;
  }
  /** @type {FilterResult} */
  const result = { vars, logs, skipped: state.skipped, duration_ms: performance.now() - started };
  if (state.skipped && state.reason !== undefined) result.reason = state.reason;
  if (!state.skipped && error !== undefined) result.error = error;
  return result;
}

/** @param {WorkerMessage} message */
const send = (message) => port.postMessage(message);

port.on("message", (/** @type {RunMessage | null | undefined} */ message) => {
  if (!message || message.type !== "run") return;
  let result;
  try {
    result = runFilter(message);
  } catch (defect) {
    // The WASM module may be in an unknown state after a host-side failure: answer, then exit so
    // the pool starts a fresh worker.
    send({
      type: "result",
      id: message.id,
      fatal: true,
      result: { vars: {}, logs: [], skipped: false, error: `filter: sandbox failure: ${defect instanceof Error ? defect.message : String(defect)}`, duration_ms: 0 },
    });
    process.exit(1);
  }
  send({ type: "result", id: message.id, result });
});

send({ type: "ready" });
