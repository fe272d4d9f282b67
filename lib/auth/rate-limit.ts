/**
 * Counts failures per key in a sliding window, in memory. Login is the only user and the web process
 * is the only place logins happen, so nothing needs to be shared; a restart forgets, which an
 * attacker cannot trigger. The number of keys is capped so a spray of made-up emails or addresses
 * cannot grow the map without bound.
 */
export interface FailureLimiterOptions {
  /** Failures allowed in the window; the next attempt is refused. */
  max: number;
  windowMs: number;
  maxKeys?: number;
}

export class FailureLimiter {
  readonly #failures = new Map<string, number[]>();
  readonly #max: number;
  readonly #windowMs: number;
  readonly #maxKeys: number;

  constructor(opts: FailureLimiterOptions) {
    this.#max = opts.max;
    this.#windowMs = opts.windowMs;
    this.#maxKeys = opts.maxKeys ?? 10_000;
  }

  /** 0 when the key may try; otherwise how long until its oldest counted failure leaves the window. */
  retryAfterMs(key: string, now: number): number {
    const recent = this.#recent(key, now);
    if (recent.length < this.#max) return 0;
    return recent[recent.length - this.#max]! + this.#windowMs - now;
  }

  fail(key: string, now: number): void {
    const recent = this.#recent(key, now);
    recent.push(now);
    // Re-insert so Map order is least recently failed first: eviction drops the stalest key.
    this.#failures.delete(key);
    this.#failures.set(key, recent.slice(-this.#max));
    while (this.#failures.size > this.#maxKeys) this.#failures.delete(this.#failures.keys().next().value!);
  }

  reset(key: string): void {
    this.#failures.delete(key);
  }

  #recent(key: string, now: number): number[] {
    const all = this.#failures.get(key);
    if (!all) return [];
    const recent = all.filter((t) => t > now - this.#windowMs);
    if (recent.length) this.#failures.set(key, recent);
    else this.#failures.delete(key);
    return recent;
  }
}
