import { describe, expect, test } from "vitest";
import { isDatabaseError } from "@/lib/core/errors";
import { explainUnavailable, pgUnavailable, storeError } from "@/lib/db/store/postgres/pool";
import type { LivenessSession, WorkerRow } from "@/lib/db/store";
import { createLivenessWatch } from "@/lib/queue/liveness";

const coded = (message: string, code?: string) => Object.assign(new Error(message), code ? { code } : {});

describe("a PostgreSQL that is away is the database's fault, not the run's", () => {
  test("restart, connection and capacity errors of node-postgres are recognised; a statement's own error is not", () => {
    for (const e of [
      coded("terminating connection due to administrator command", "57P01"),
      coded("the database system is starting up", "57P03"),
      coded("server closed the connection", "08006"),
      coded("sorry, too many clients already", "53300"),
      coded("could not write: No space left on device", "53100"),
      coded("connect ECONNREFUSED 127.0.0.1:5432", "ECONNREFUSED"),
      coded("read ECONNRESET", "ECONNRESET"),
      coded("write EPIPE", "EPIPE"),
      new Error("Connection terminated unexpectedly"),
      new Error("Client has encountered a connection error and is not queryable"),
      new Error("timeout exceeded when trying to connect"),
      new AggregateError([coded("connect ECONNREFUSED ::1:5432", "ECONNREFUSED"), coded("connect ECONNREFUSED 127.0.0.1:5432", "ECONNREFUSED")]),
    ]) {
      expect(pgUnavailable(e), e.message).toBe(true);
      expect(isDatabaseError(storeError(e)), e.message).toBe(true);
    }
    for (const e of [coded("duplicate key", "23505"), coded("syntax error", "42601"), new Error("boom"), "not an error"]) {
      expect(pgUnavailable(e)).toBe(false);
      expect(isDatabaseError(storeError(e))).toBe(false);
    }
  });

  test("an action's own ECONNREFUSED is the action's failure: only the store's mark makes it the database's", () => {
    expect(isDatabaseError(coded("connect ECONNREFUSED 10.0.0.1:443", "ECONNREFUSED"))).toBe(false);
    expect(isDatabaseError(coded("database or disk is full", "SQLITE_FULL"))).toBe(true);
  });

  test("the start-up line says where and what to check, never the password", () => {
    const line = explainUnavailable(coded("connect ECONNREFUSED 127.0.0.1:5433", "ECONNREFUSED"), "postgres://app:s3cret@127.0.0.1:5433/whenthen");
    expect(line).toBe(
      "postgres: cannot use 127.0.0.1:5433/whenthen: connect ECONNREFUSED 127.0.0.1:5433; nothing accepts connections there: is PostgreSQL running, and are DATABASE_URL's host and port right?",
    );
    expect(explainUnavailable(coded('password authentication failed for user "app"', "28P01"), "postgres://app:s3cret@db/x")).toMatch(/db:5432\/x: .*\(28P01\); the server refused the login: check the user and password/);
    expect(explainUnavailable(coded("sorry, too many clients already", "53300"), "postgres://db/x")).not.toContain("s3cret");
  });
});

const row = (id: string, over: Partial<WorkerRow>): WorkerRow => ({
  id,
  hostname: "h",
  pid: 1,
  seenAt: "2026-12-05T00:00:00.000Z",
  leaseUntil: "2026-12-05T00:00:30.000Z",
  fault: null,
  smtpPort: null,
  metrics: null,
  processScope: null,
  sessionLock: null,
  createdAt: "2026-12-05T00:00:00.000Z",
  ...over,
});

describe("a dead worker is seen directly", () => {
  test("on this machine: a worker whose pid is gone is reported at once, and once; other machines' pids are never checked", async () => {
    const alive = new Set([10]);
    const watch = createLivenessWatch({ self: "me", scope: "here", alive: (pid) => alive.has(pid) });
    watch.watch([row("me", { pid: 1, processScope: "here" }), row("a", { pid: 10, processScope: "here" }), row("b", { pid: 11, processScope: "here" }), row("c", { pid: 12, processScope: "there" })]);
    expect(await watch.probe()).toEqual(["b"]);
    expect(await watch.probe()).toEqual([]);
    alive.delete(10);
    expect(await watch.probe()).toEqual(["a"]);
  });

  test("on PostgreSQL: a free session lock counts only when still free `confirmMs` later, seen by a session of ours held all that time", async () => {
    let t = 0;
    let free: number[] = [];
    let since: number | null = 0;
    const session: LivenessSession = { key: () => 1, heldSince: () => since, free: async () => (since === null ? null : free), close: async () => {} };
    const watch = createLivenessWatch({ self: "me", scope: null, session, confirmMs: 3_000, now: () => t });
    watch.watch([row("a", { sessionLock: 5 }), row("b", { sessionLock: 6 })]);
    expect(await watch.probe()).toEqual([]);
    free = [5];
    t = 1_000;
    expect(await watch.probe()).toEqual([]);
    // b's lock taken back in between (a server restart: sessions come back one by one).
    t = 2_000;
    free = [5, 6];
    expect(await watch.probe()).toEqual([]);
    t = 3_000;
    free = [5];
    expect(await watch.probe()).toEqual([]);
    // Our own session came back after a first sighting: the sighting starts again.
    since = 3_500;
    t = 4_000;
    expect(await watch.probe()).toEqual([]);
    t = 6_999;
    expect(await watch.probe()).toEqual([]);
    t = 7_000;
    expect(await watch.probe()).toEqual(["a"]);
  });
});
