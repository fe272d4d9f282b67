/**
 * Group commit of a worker's settles on PostgreSQL: while one of a worker's finish-and-claim
 * statements is in flight, the finishes its other slots hand over wait, and go together in the
 * next statement (Q.FINISH_MANY_AND_CLAIM) with as many claims as finishes went in. One statement
 * per worker in flight: a finish waits at most for the one before it, and a busy worker's slots
 * commit several runs per statement and per WAL flush instead of one each.
 *
 * Measured (bench/pg-drain.bench.ts, bench/RESULTS.md): it is the database's CPU per run it saves,
 * which on a small machine is what the web process and the workers share.
 */

export interface Lane<I, O> {
  /** Resolves with `item`'s result, from the statement it went in. */
  push(key: string, item: I): Promise<O>;
}

/**
 * `send` runs a batch (one item alone, or several) and returns a result per item, in order. Items
 * are batched per `key` (a worker id: the claims of one statement are one worker's).
 */
export function createLanes<I, O>(send: (items: I[]) => Promise<O[]>): Lane<I, O> {
  type Waiting = { item: I; resolve: (o: O) => void; reject: (e: unknown) => void };
  const lanes = new Map<string, Waiting[]>();
  const drain = async (key: string, batch: Waiting[]) => {
    for (;;) {
      try {
        const out = await send(batch.map((w) => w.item));
        batch.forEach((w, i) => w.resolve(out[i]!));
      } catch (err) {
        for (const w of batch) w.reject(err);
      }
      const waiting = lanes.get(key)!;
      if (waiting.length === 0) {
        lanes.delete(key);
        return;
      }
      batch = waiting.splice(0);
    }
  };
  return {
    push: (key, item) =>
      new Promise<O>((resolve, reject) => {
        const waiting = lanes.get(key);
        if (waiting) {
          waiting.push({ item, resolve, reject });
          return;
        }
        lanes.set(key, []);
        void drain(key, [{ item, resolve, reject }]);
      }),
  };
}
