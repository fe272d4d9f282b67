import { Lru } from "../../../core/lru";
import type { HookApplet } from "../types";
import type { Listener } from "./listen";

/** drizzle-pg/0010: the id of an applet whose hook columns changed or which was deleted. */
export const APPLETS_CHANNEL = "whenthen_applets";

export interface HookCacheOptions {
  /** Entries older than this are read again even without a notification (a LISTEN session that died unnoticed). */
  maxAgeMs?: number;
  /** At most this many applets are kept; a full cache forgets the least recently used. */
  maxEntries?: number;
  /** Monotonic milliseconds (injected for tests). */
  now?: () => number;
}

/**
 * The row a webhook request needs (`applets.forHook`), kept per web process so a request costs no
 * round trip on PostgreSQL, and still "a disable or an edit applies at once": every change of those
 * columns is announced by the database (drizzle-pg/0010, on every host) and drops the entry. The
 * cache is trusted only while this process's LISTEN on the channel is in (`listener.listening`);
 * a reconnect announces "" and drops everything. A read that a change overtook is not kept: the
 * generation counts notifications, and a row read across one is returned but not cached. An
 * unknown applet is not cached (a request for it reads again). `drop` is for this process's own
 * writes, so a disable followed by a request in the same process never meets the old row in the
 * moment before the notification comes back.
 */
export function cachedForHook(
  read: (id: string) => Promise<HookApplet | null>,
  listener: () => Listener,
  opts: HookCacheOptions = {},
): { forHook(id: string): Promise<HookApplet | null>; drop(id?: string): void } {
  const maxAgeMs = opts.maxAgeMs ?? 10_000;
  const maxEntries = opts.maxEntries ?? 10_000;
  const now = opts.now ?? (() => performance.now());
  const entries = new Lru<string, { row: HookApplet; at: number }>(maxEntries);
  let generation = 0;
  let subscribed = false;
  const drop = (id?: string) => {
    generation++;
    if (id === undefined) entries.clear();
    else entries.delete(id);
  };

  const forHook = async (id: string): Promise<HookApplet | null> => {
    if (!subscribed) {
      subscribed = true;
      listener().on(APPLETS_CHANNEL, (changed) => drop(changed === "" ? undefined : changed));
    }
    const trusted = listener().listening(APPLETS_CHANNEL);
    if (trusted) {
      const hit = entries.get(id);
      if (hit && now() - hit.at < maxAgeMs) return hit.row;
    } else entries.clear();
    const before = generation;
    const row = await read(id);
    if (row && trusted && generation === before && listener().listening(APPLETS_CHANNEL)) {
      entries.set(id, { row, at: now() });
    }
    return row;
  };
  return { forHook, drop };
}
