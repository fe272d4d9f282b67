import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { withJobLock } from "@/lib/scheduler/locks";
import { createTestApp, type TestApp } from "../helpers/db";

/** The job_locks statement alone (spec "Data model: job_locks"), on a real SQLite file. */
let app: TestApp;
let other: TestApp;
beforeEach(() => {
  app = createTestApp();
  other = createTestApp({ dataDir: app.dataDir });
});
afterEach(() => {
  other.cleanup();
  app.cleanup();
});

const T = (iso: string) => new Date(iso);
const TTL = 60_000;

describe("AC17: job_locks", () => {
  test("AC17: every named job has its row from the start", () => {
    for (const name of ["scheduler_tick", "retention", "worker_heartbeat"]) {
      expect(app.repos.jobLocks.get(name)).toEqual({ name, locked_by: null, locked_at: null, expires_at: null, last_run_at: null });
    }
  });

  test("AC17: one statement takes a free lock; a second holder on another connection gets zero rows until it expires", () => {
    expect(app.repos.jobLocks.take("scheduler_tick", "worker-a", T("2026-03-07T12:00:00.000Z"), TTL)).toBe(true);
    expect(app.repos.jobLocks.get("scheduler_tick")).toMatchObject({ locked_by: "worker-a", locked_at: "2026-03-07T12:00:00.000Z", expires_at: "2026-03-07T12:01:00.000Z" });
    expect(other.repos.jobLocks.take("scheduler_tick", "worker-b", T("2026-03-07T12:00:59.999Z"), TTL)).toBe(false);
    // expires_at < now, strictly: at the instant of expiry it is still held.
    expect(other.repos.jobLocks.take("scheduler_tick", "worker-b", T("2026-03-07T12:01:00.000Z"), TTL)).toBe(false);
    expect(other.repos.jobLocks.take("scheduler_tick", "worker-b", T("2026-03-07T12:01:00.001Z"), TTL)).toBe(true);
    expect(app.repos.jobLocks.get("scheduler_tick")).toMatchObject({ locked_by: "worker-b" });
  });

  test("AC17: a holder whose lock was taken over can neither renew nor release it", () => {
    app.repos.jobLocks.take("retention", "worker-a", T("2026-03-07T12:00:00.000Z"), 600_000);
    other.repos.jobLocks.take("retention", "worker-b", T("2026-03-07T12:10:00.001Z"), 600_000);
    expect(app.repos.jobLocks.renew("retention", "worker-a", T("2026-03-07T12:10:01.000Z"), 600_000)).toBe(false);
    expect(app.repos.jobLocks.release("retention", "worker-a", T("2026-03-07T12:10:01.000Z"))).toBe(false);
    expect(app.repos.jobLocks.get("retention")).toMatchObject({ locked_by: "worker-b", expires_at: "2026-03-07T12:20:00.001Z" });
    expect(other.repos.jobLocks.renew("retention", "worker-b", T("2026-03-07T12:15:00.000Z"), 600_000)).toBe(true);
    expect(app.repos.jobLocks.get("retention")).toMatchObject({ expires_at: "2026-03-07T12:25:00.000Z" });
  });

  test("AC17: release frees the lock at once and records last_run_at", () => {
    app.repos.jobLocks.take("scheduler_tick", "worker-a", T("2026-03-07T12:00:00.000Z"), TTL);
    expect(app.repos.jobLocks.release("scheduler_tick", "worker-a", T("2026-03-07T12:00:02.000Z"))).toBe(true);
    expect(app.repos.jobLocks.get("scheduler_tick")).toEqual({ name: "scheduler_tick", locked_by: null, locked_at: null, expires_at: null, last_run_at: "2026-03-07T12:00:02.000Z" });
    expect(other.repos.jobLocks.take("scheduler_tick", "worker-b", T("2026-03-07T12:00:03.000Z"), TTL)).toBe(true);
  });

  test("AC17: withJobLock skips while another holder has the lock, and releases even when the job throws", async () => {
    other.repos.jobLocks.take("scheduler_tick", "worker-b", app.clock.now(), TTL);
    let ran = 0;
    expect(await withJobLock(app, "scheduler_tick", "worker-a", TTL, app.clock.now(), async () => ++ran)).toEqual({ ran: false });
    expect(ran).toBe(0);
    other.repos.jobLocks.release("scheduler_tick", "worker-b", app.clock.now());

    await expect(withJobLock(app, "scheduler_tick", "worker-a", TTL, app.clock.now(), async () => Promise.reject(new Error("job failed")))).rejects.toThrow("job failed");
    expect(app.repos.jobLocks.get("scheduler_tick")).toMatchObject({ locked_by: null });
    expect(await withJobLock(app, "scheduler_tick", "worker-a", TTL, app.clock.now(), async () => ++ran)).toEqual({ ran: true, value: 1 });
  });
});
