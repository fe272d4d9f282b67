/**
 * Time is injected everywhere: production uses the system clock, tests a manual one they advance.
 * `sleep` goes through the clock too, so a plug-in that waits (Discord's 1 s between chunks) does
 * not make a test wait for real.
 */
export interface Clock {
  now(): Date;
  sleep(ms: number): Promise<void>;
}

/**
 * The Date of the runtime, taken when this module loads: in the web process before Next.js
 * prepares, whose node-environment extensions then replace the global Date so that every
 * `new Date()` and `Date.now()` asks two AsyncLocalStorages whether a prerender is reading the
 * clock (1.7 % of the event loop under webhook load, CPU profile of `pnpm bench webhook`). Our
 * time is never a prerender's: the composition roots and the stores read it through here.
 */
const NativeDate = Date;
/** Milliseconds since the epoch, from the runtime's own Date.now (see NativeDate). */
export const nowMs: () => number = NativeDate.now;

export const systemClock: Clock = {
  now: () => new NativeDate(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

/** A clock that only moves when told to; `sleep` jumps it forward instead of waiting. */
export class ManualClock implements Clock {
  #now: number;

  constructor(start: Date | string | number = "2026-01-01T00:00:00.000Z") {
    this.#now = new Date(start).getTime();
  }

  now(): Date {
    return new Date(this.#now);
  }

  set(to: Date | string | number): void {
    this.#now = new Date(to).getTime();
  }

  advance(ms: number): void {
    this.#now += ms;
  }

  sleep(ms: number): Promise<void> {
    if (ms > 0) this.#now += ms;
    return Promise.resolve();
  }
}

