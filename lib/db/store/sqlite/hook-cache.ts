import { Lru } from "../../../core/lru";
import { perTurn } from "../../../core/per-turn";
import type { HookApplet } from "../types";

/**
 * The row a webhook request needs (`applets.forHook`), kept per process and file, so that a request
 * reads no applet row on SQLite: under load that read was a tenth of the web process's event loop
 * (CPU profile of `pnpm bench webhook`), since every commit of another connection (the worker's,
 * the ingest thread's) drops the connection's page cache and the row was read from the file again.
 *
 * "A disable or an edit applies at once" still holds across processes: drizzle/0013's triggers
 * move one counter (`hook_changes.n`) on every change of the columns a webhook reads and on every
 * delete, by any connection (the editor in this process, the worker's auto-pause, a second process
 * on the file). The counter is read at most once per turn of the event loop, before any row, and
 * an entry is served only while the counter is what it was when its row was read. A row read after
 * a change it was tagged as before is read again next time (safe); a row read before a change is
 * tagged with the older count and not served after it. This process's own writes through any store
 * on the file forget the turn's count (`changed`), so a disable followed by a request in the same
 * turn meets the new row. Unknown applets are not kept (a request for one reads again).
 */
export interface HookCache {
  forHook(id: string): HookApplet | null;
  /** A write that may have moved the counter: the next request reads it again. */
  changed(): void;
}

export function createHookCache(read: (id: string) => HookApplet | null, count: () => number, opts: { maxEntries?: number } = {}): HookCache {
  const maxEntries = opts.maxEntries ?? 10_000;
  const entries = new Lru<string, { row: HookApplet; n: number }>(maxEntries);
  const turn = perTurn(count);
  return {
    forHook(id) {
      const n = turn.get();
      const hit = entries.get(id);
      if (hit && hit.n === n) return hit.row;
      const row = read(id);
      if (row) {
        entries.set(id, { row, n });
      } else entries.delete(id);
      return row;
    },
    changed() {
      turn.forget();
    },
  };
}
