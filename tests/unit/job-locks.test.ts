import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { withJobLock } from "@/lib/tick/locks";
import { createTestApp, type TestApp } from "../helpers/db";

/** The job_locks statement alone (spec "Data model: job_locks"), on a real SQLite file. */
let app: TestApp;
let other: TestApp;
beforeEach(() => {
  app = createTestApp();
  other = createTestApp({ dataDir: app.dataDir });
});
afterEach(() => {
  void other.cleanup();
  void app.cleanup();
});

const T = (iso: string) => new Date(iso);
const TTL = 60_000;

describe("AC17: job_locks", () => {
  test("AC17: every named job has its row from the start", async () => {
    for (const name of ["scheduler_tick", "retention", "worker_heartbeat"]) {
      expect(await app.store.jobLocks.get(name)).toEqual({ name, lockedBy: null, lockedAt: null, expiresAt: null, lastRunAt: null });
    }
  });

  test("AC17: one statement takes a free lock; a second holder on another connection gets zero rows until it expires", async () => {
    expect(await app.store.jobLocks.take("scheduler_tick", "worker-a", T("2026-03-07T12:00:00.000Z"), TTL)).toBe(true);
    expect(await app.store.jobLocks.get("scheduler_tick")).toMatchObject({ lockedBy: "worker-a", lockedAt: "2026-03-07T12:00:00.000Z", expiresAt: "2026-03-07T12:01:00.000Z" });
    expect(await other.store.jobLocks.take("scheduler_tick", "worker-b", T("2026-03-07T12:00:59.999Z"), TTL)).toBe(false);
    // expires_at < now, strictly: at the instant of expiry it is still held.
    expect(await other.store.jobLocks.take("scheduler_tick", "worker-b", T("2026-03-07T12:01:00.000Z"), TTL)).toBe(false);
    expect(await other.store.jobLocks.take("scheduler_tick", "worker-b", T("2026-03-07T12:01:00.001Z"), TTL)).toBe(true);
    expect(await app.store.jobLocks.get("scheduler_tick")).toMatchObject({ lockedBy: "worker-b" });
  });

  test("AC17: a holder whose lock was taken over can neither renew nor release it", async () => {
    await app.store.jobLocks.take("retention", "worker-a", T("2026-03-07T12:00:00.000Z"), 600_000);
    await other.store.jobLocks.take("retention", "worker-b", T("2026-03-07T12:10:00.001Z"), 600_000);
    expect(await app.store.jobLocks.renew("retention", "worker-a", T("2026-03-07T12:10:01.000Z"), 600_000)).toBe(false);
    expect(await app.store.jobLocks.release("retention", "worker-a", T("2026-03-07T12:10:01.000Z"))).toBe(false);
    expect(await app.store.jobLocks.get("retention")).toMatchObject({ lockedBy: "worker-b", expiresAt: "2026-03-07T12:20:00.001Z" });
    expect(await other.store.jobLocks.renew("retention", "worker-b", T("2026-03-07T12:15:00.000Z"), 600_000)).toBe(true);
    expect(await app.store.jobLocks.get("retention")).toMatchObject({ expiresAt: "2026-03-07T12:25:00.000Z" });
  });

  test("AC17: release frees the lock at once and records last_run_at", async () => {
    await app.store.jobLocks.take("scheduler_tick", "worker-a", T("2026-03-07T12:00:00.000Z"), TTL);
    expect(await app.store.jobLocks.release("scheduler_tick", "worker-a", T("2026-03-07T12:00:02.000Z"))).toBe(true);
    expect(await app.store.jobLocks.get("scheduler_tick")).toEqual({ name: "scheduler_tick", lockedBy: null, lockedAt: null, expiresAt: null, lastRunAt: "2026-03-07T12:00:02.000Z" });
    expect(await other.store.jobLocks.take("scheduler_tick", "worker-b", T("2026-03-07T12:00:03.000Z"), TTL)).toBe(true);
  });

  test("AC17: withJobLock skips while another holder has the lock, and releases even when the job throws", async () => {
    await other.store.jobLocks.take("scheduler_tick", "worker-b", app.clock.now(), TTL);
    let ran = 0;
    expect(await withJobLock(app, "scheduler_tick", "worker-a", TTL, app.clock.now(), async () => ++ran)).toEqual({ ran: false });
    expect(ran).toBe(0);
    await other.store.jobLocks.release("scheduler_tick", "worker-b", app.clock.now());

    await expect(withJobLock(app, "scheduler_tick", "worker-a", TTL, app.clock.now(), async () => Promise.reject(new Error("job failed")))).rejects.toThrow("job failed");
    expect(await app.store.jobLocks.get("scheduler_tick")).toMatchObject({ lockedBy: null });
    expect(await withJobLock(app, "scheduler_tick", "worker-a", TTL, app.clock.now(), async () => ++ran)).toEqual({ ran: true, value: 1 });
  });
});
