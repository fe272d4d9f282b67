/**
 * A value read at most once per turn of the event loop: the first `get` of a turn reads it, the
 * others of that turn share it, and it is read again after the turn (or after `forget`). For what
 * concurrent requests of one turn may share (a webhook's counter of applet changes, its stored
 * secrets), not for what a request must see fresh after its own write.
 */
export function perTurn<T>(read: () => T): { get(): T; forget(): void } {
  let memo: { value: T } | null = null;
  return {
    get() {
      if (!memo) {
        memo = { value: read() };
        setImmediate(() => (memo = null));
      }
      return memo.value;
    },
    forget() {
      memo = null;
    },
  };
}

/**
 * A point late in this turn of the event loop (its check phase) that every caller of the turn
 * shares: requests that await it resume back to back, in one run of the microtask queue. Code and
 * tables a request uses then stay in the CPU's caches for the next one. A signature check's HMAC
 * costs ~4 µs when the previous request has just run it and ~30 µs after a whole request's other
 * work (bench/RESULTS.md); under load a turn holds dozens of requests.
 */
export function turnBarrier(): () => Promise<void> {
  let point: Promise<void> | null = null;
  // Cleared before it resolves: a caller that comes after (even one resuming from it) waits for the next turn's.
  return () =>
    (point ??= new Promise<void>((resolve) =>
      setImmediate(() => {
        point = null;
        resolve();
      }),
    ));
}
