import { describe, expect, test } from "vitest";
import { APPLETS_CHANNEL, cachedForHook } from "@/lib/db/store/postgres/hook-cache";
import type { HookApplet } from "@/lib/db/store/types";

/** A LISTEN session under the test's control: `up` says whether its LISTEN is in; `send` is a notification. */
function fakeListener() {
  const subs = new Map<string, Set<(p: string) => void>>();
  const l = {
    up: true,
    on: (channel: string, fn: (p: string) => void) => {
      (subs.get(channel) ?? subs.set(channel, new Set()).get(channel)!).add(fn);
      return () => void subs.get(channel)?.delete(fn);
    },
    listening: (channel: string) => l.up && subs.has(channel),
    close: async () => undefined,
    send: (payload: string) => subs.get(APPLETS_CHANNEL)?.forEach((fn) => fn(payload)),
  };
  return l;
}

function reader() {
  const rows = new Map<string, HookApplet>([["a", { id: "a", enabled: true, webhookToken: "t", definition: "{}", listenUntil: null }]]);
  const r = {
    reads: 0,
    rows,
    /** When set, a read waits for it (to let a notification overtake the read). */
    gate: null as Promise<void> | null,
    read: async (id: string) => {
      r.reads++;
      const row = rows.get(id) ?? null;
      if (r.gate) await r.gate;
      return row ? { ...row } : null;
    },
  };
  return r;
}

describe("the webhook applet cache on PostgreSQL (lib/db/store/postgres/hook-cache)", () => {
  test("a second request reads nothing; a notification for the applet (or a reconnect's empty one) makes the next read the database", async () => {
    const db = reader();
    const l = fakeListener();
    const { forHook } = cachedForHook(db.read, () => l);
    await forHook("a"); // subscribes; the LISTEN is in from now on
    await forHook("a");
    expect(db.reads).toBe(1);
    db.rows.set("a", { ...db.rows.get("a")!, enabled: false });
    l.send("a");
    expect((await forHook("a"))?.enabled).toBe(false);
    expect(db.reads).toBe(2);
    await forHook("a");
    l.send("");
    await forHook("a");
    expect(db.reads).toBe(3);
  });

  test("a read overtaken by a change is returned but not kept; unknown applets and reads while LISTEN is down are never kept", async () => {
    const db = reader();
    const l = fakeListener();
    const { forHook } = cachedForHook(db.read, () => l);
    let open!: () => void;
    db.gate = new Promise((r) => (open = r));
    const pending = forHook("a");
    l.send("a"); // the change commits while the read is on its way
    open();
    await pending;
    db.gate = null;
    await forHook("a");
    expect(db.reads).toBe(2);
    await forHook("a");
    expect(db.reads).toBe(2);

    expect(await forHook("missing")).toBeNull();
    expect(await forHook("missing")).toBeNull();
    expect(db.reads).toBe(4);

    l.up = false;
    await forHook("a");
    await forHook("a");
    expect(db.reads).toBe(6);
  });

  test("this process's own writes drop the entry at once, and entries expire after maxAgeMs", async () => {
    const db = reader();
    const l = fakeListener();
    let t = 0;
    const cache = cachedForHook(db.read, () => l, { maxAgeMs: 1_000, now: () => t });
    await cache.forHook("a");
    await cache.forHook("a");
    cache.drop("a");
    await cache.forHook("a");
    expect(db.reads).toBe(2);
    t += 999;
    await cache.forHook("a");
    expect(db.reads).toBe(2);
    t += 1;
    await cache.forHook("a");
    expect(db.reads).toBe(3);
  });
});
