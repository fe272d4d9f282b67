import type pg from "pg";
import { pgDriver } from "./driver";
import type { Logger } from "../../../core/log";
import { assertSchema } from "./pool";

export interface Listener {
  /** Calls `fn` with each payload on `channel`; returns the unsubscribe function. */
  on(channel: string, fn: (payload: string) => void): () => void;
  /**
   * Whether notifications on `channel` reach this process now: the session is up and its LISTEN
   * went in. A cache kept fresh by notifications must not be trusted otherwise.
   */
  listening(channel: string): boolean;
  close(): Promise<void>;
}

/**
 * One session connection per process for LISTEN (a pooled connection cannot hold it: LISTEN lives
 * as long as the session, and a transaction-mode pooler such as PgBouncer hands the session to
 * someone else after each transaction, so notifications would be lost; DATABASE_LISTEN_URL points
 * past such a pooler). Opened on the first subscription; reconnects with a back-off when the
 * connection drops, and then tells every subscriber once (something may have changed meanwhile),
 * since the callers' slow poll is only the last resort.
 */
export function createListener(opts: { url: string; schema?: string; log?: Logger; retryMs?: number }): Listener {
  const subscribers = new Map<string, Set<(payload: string) => void>>();
  let client: pg.Client | null = null;
  let connecting: Promise<void> | null = null;
  let closed = false;
  let retryTimer: NodeJS.Timeout | null = null;
  let failures = 0;
  /** Channels whose LISTEN went in on the current session. */
  const active = new Set<string>();

  const deliver = (channel: string, payload: string) => {
    for (const fn of subscribers.get(channel) ?? []) {
      try {
        fn(payload);
      } catch {
        // a listener must not throw (Store#notifications); one that does loses only its own call
      }
    }
  };

  const connect = (): Promise<void> =>
    (connecting ??= (async () => {
      const c = new (pgDriver().Client)({ connectionString: opts.url, application_name: "whenthen-listen", options: opts.schema ? `-c search_path=${assertSchema(opts.schema)}` : undefined });
      c.on("notification", (n) => deliver(n.channel, n.payload ?? ""));
      c.on("error", (err) => {
        opts.log?.warn("postgres: the LISTEN connection failed; reconnecting", { error: err.message });
        void c.end().catch(() => undefined);
        if (client === c) {
          client = null;
          active.clear();
        }
        schedule();
      });
      try {
        await c.connect();
        // Until every channel subscribed so far (including any added while this ran) is listened to.
        const listened = new Set<string>();
        for (let pending = [...subscribers.keys()]; pending.length > 0; pending = [...subscribers.keys()].filter((ch) => !listened.has(ch))) {
          for (const channel of pending) {
            await c.query(`LISTEN ${pgDriver().escapeIdentifier(channel)}`);
            listened.add(channel);
          }
        }
        if (closed) {
          await c.end();
          return;
        }
        client = c;
        for (const channel of listened) active.add(channel);
        if (failures > 0) for (const channel of listened) deliver(channel, "");
        failures = 0;
      } catch (err) {
        void c.end().catch(() => undefined);
        opts.log?.warn("postgres: could not open the LISTEN connection; retrying", { error: (err as Error).message });
        schedule();
      } finally {
        connecting = null;
      }
    })());

  const schedule = () => {
    if (closed || retryTimer) return;
    failures++;
    retryTimer = setTimeout(
      () => {
        retryTimer = null;
        void connect();
      },
      Math.min(30_000, (opts.retryMs ?? 500) * 2 ** Math.min(failures - 1, 6)),
    );
    retryTimer.unref();
  };

  return {
    on(channel, fn) {
      let set = subscribers.get(channel);
      if (!set) {
        set = new Set();
        subscribers.set(channel, set);
        const c = client;
        if (c)
          void c
            .query(`LISTEN ${pgDriver().escapeIdentifier(channel)}`)
            .then(() => {
              if (client === c) active.add(channel);
            })
            .catch(() => undefined);
      }
      set.add(fn);
      if (!client) void connect();
      return () => void set.delete(fn);
    },
    listening: (channel) => client !== null && active.has(channel),
    async close() {
      closed = true;
      if (retryTimer) clearTimeout(retryTimer);
      await connecting?.catch(() => undefined);
      await client?.end().catch(() => undefined);
      client = null;
      active.clear();
    },
  };
}
