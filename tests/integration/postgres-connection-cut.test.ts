import pg from "pg";
import { afterEach, describe, expect, test } from "vitest";
import { isDatabaseError } from "@/lib/core/errors";
import { inTransaction } from "@/lib/db/store/postgres/pool";
import { TEST_POSTGRES_URL, createTestPostgresStore, noPostgres } from "../helpers/postgres";

/**
 * A connection the server cuts while the store has it checked out (a transaction in progress, a
 * restart, a proxy that drops everything): node-postgres emits 'error' on that client, and pg-pool
 * listens for it only while the client is idle in the pool. Unheard, the event is an uncaught
 * exception and ends the process (a worker dies in the middle of a burst). What must happen
 * instead: the transaction rejects with an error that says the database is away, the process
 * lives on, and the next call gets a fresh connection.
 */
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** Every uncaught exception in this process until the test ends. */
function watchUncaught(): Error[] {
  const seen: Error[] = [];
  const onUncaught = (err: Error) => void seen.push(err);
  process.on("uncaughtException", onUncaught);
  cleanups.push(() => void process.off("uncaughtException", onUncaught));
  return seen;
}

/** Ends a backend from another session, as an operator or a server restart does. */
async function terminate(pid: number): Promise<void> {
  const admin = new pg.Client({ connectionString: TEST_POSTGRES_URL });
  await admin.connect();
  try {
    await admin.query("SELECT pg_terminate_backend($1)", [pid]);
  } finally {
    await admin.end();
  }
}

const settle = () => new Promise((r) => setTimeout(r, 200));

describe.skipIf(noPostgres)(`a PostgreSQL connection cut while checked out${noPostgres ? ` (${noPostgres})` : ""}`, () => {
  test.each([
    ["between two statements of a transaction", false],
    ["while a statement of the transaction runs", true],
  ])("a cut %s rejects the transaction as the database being away, the process survives, and the next call works", async (_when, duringStatement) => {
    const uncaught = watchUncaught();
    const store = await createTestPostgresStore();
    cleanups.push(() => store.cleanup());

    let killed = 0;
    const outcome = await inTransaction(store.pool, async (client) => {
      const pid = (await client.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
      killed = pid;
      if (duringStatement) {
        const running = client.query("SELECT pg_sleep(5)");
        running.catch(() => undefined); // awaited below, once the cut is made
        await settle();
        await terminate(pid);
        await running;
      } else {
        await terminate(pid);
        // The server's goodbye and the closed socket reach the client while nothing is asked of it.
        await settle();
        await client.query("SELECT 1");
      }
      return "committed";
    }).then(
      (v) => ({ ok: true as const, v }),
      (err: unknown) => ({ ok: false as const, err }),
    );
    await settle();

    expect(uncaught.map((e) => e.message)).toEqual([]);
    expect(outcome.ok).toBe(false);
    if (!outcome.ok) expect(isDatabaseError(outcome.err), String(outcome.err)).toBe(true);

    // The dead client was not put back: the next transaction runs on another backend.
    const next = await inTransaction(store.pool, async (client) => (await client.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid);
    expect(next).not.toBe(killed);
    await expect(store.applets.list()).resolves.toEqual([]);
  });
});
