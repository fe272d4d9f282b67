/**
 * One better-sqlite3 connection serves the whole process, and its transactions are synchronous.
 * An async unit of work (Store#transaction) holds BEGIN IMMEDIATE across awaits, so while it is
 * open no other caller may touch the connection: its statements would join (and roll back with)
 * that transaction. The gate makes that so.
 *
 * - Free gate: a store call runs its synchronous statement at once and hands back a resolved
 *   promise (the hot path pays one promise, no queue).
 * - Held gate (a unit of work is open): calls wait in arrival order and run, each alone, after it.
 *
 * Calls on the transaction's own `tx` bypass the gate: they are the holder.
 */
export class ConnectionGate {
  #held = false;
  readonly #waiting: (() => void)[] = [];

  /** Runs `fn` (synchronous) alone on the connection. */
  run<T>(fn: () => T): Promise<T> {
    if (!this.#held) {
      try {
        return Promise.resolve(fn());
      } catch (err) {
        return Promise.reject(asError(err));
      }
    }
    return new Promise<T>((resolve, reject) => {
      this.#waiting.push(() => {
        try {
          resolve(fn());
        } catch (err) {
          reject(asError(err));
        } finally {
          this.#release();
        }
      });
    });
  }

  /** Takes the gate for an async section; resolves once it is this caller's. Pair with `release`. */
  acquire(): Promise<void> {
    if (!this.#held) {
      this.#held = true;
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => this.#waiting.push(resolve));
  }

  release(): void {
    this.#release();
  }

  /** True while a unit of work holds the connection. */
  get held(): boolean {
    return this.#held;
  }

  // Hands the gate straight to the next waiter (it stays held), or frees it.
  #release(): void {
    const next = this.#waiting.shift();
    if (next) next();
    else this.#held = false;
  }
}

/** What a synchronous statement threw, as the Error a promise rejects with. */
export const asError = (err: unknown): Error => (err instanceof Error ? err : new Error(String(err)));
