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
