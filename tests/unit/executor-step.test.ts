import { describe, expect, test } from "vitest";
import { ManualClock } from "@/lib/core/clock";
import { ActionError } from "@/lib/core/errors";
import { LIMITS } from "@/lib/core/limits";
import { createStepRunner, type StepRunnerDeps } from "@/lib/executor/step";
import type { Step } from "@/lib/executor/types";
import { createRedactor } from "@/lib/secrets/redact";

const SECRET = "sk-live-0123456789abcdef";

function setup(over: Partial<StepRunnerDeps> = {}) {
  const clock = new ManualClock("2026-03-01T10:00:00.000Z");
  const redactor = createRedactor([SECRET]);
  // What each save stored, as the database would keep it (a copy, not the live records).
  const saves: Step[][] = [];
  const runner = createStepRunner({
    attempt: 2,
    earlier: [],
    clock,
    redactor,
    save: (steps) => {
      saves.push(structuredClone(steps));
      return true;
    },
    ...over,
  });
  return { clock, redactor, saves, runner };
}

const earlierStep = (over: Partial<Step>): Step => ({
  kind: "action",
  name: "http",
  index: 0,
  status: "succeeded",
  attempt: 1,
  warnings: [],
  logs: [],
  started_at: "2026-03-01T09:00:00.000Z",
  duration_ms: 12,
  error: null,
  output: { status: 200 },
  ...over,
});

describe("runStep (lib/executor/step.ts)", () => {
  test("a step an earlier attempt succeeded at is carried over unchanged and its body is not run", async () => {
    const earlier = earlierStep({});
    const { runner, saves } = setup({ earlier: [earlier] });
    let ran = false;
    const r = await runner.run({ kind: "action", name: "http", index: 0 }, async () => {
      ran = true;
      return { value: 1 };
    });
    expect(r).toEqual({ state: "reused", step: earlier });
    expect(ran).toBe(false);
    expect(runner.steps).toEqual([earlier]);
    expect(runner.succeededBefore({ kind: "action", index: 0 })).toBe(true);
    // Already stored by the attempt that made it: reusing it writes nothing.
    await runner.run({ kind: "action", name: "note", index: 1 }, async () => ({ value: 2 }));
    expect(saves).toEqual([]);
  });

  test("a step an earlier attempt failed at runs again and keeps the earlier error in previous_errors", async () => {
    const failed = earlierStep({ status: "failed", error: "answered 500", output: { status: 500 } });
    const { runner } = setup({ earlier: [failed] });
    expect(runner.succeededBefore({ kind: "action", index: 0 })).toBe(false);
    const r = await runner.run({ kind: "action", name: "http", index: 0 }, async () => ({ output: { status: 200 }, value: null }));
    expect(r.state).toBe("done");
    expect(runner.steps[0]).toMatchObject({
      status: "succeeded",
      attempt: 2,
      output: { status: 200 },
      previous_errors: [{ attempt: 1, error: "answered 500", at: failed.started_at }],
    });
  });

  test("the step is timed with the clock, or with the duration the body measured itself", async () => {
    const { runner, clock } = setup();
    await runner.run({ kind: "transform", name: "m" }, async () => {
      clock.advance(250);
      return { value: null };
    });
    await runner.run({ kind: "filter", name: "filter" }, async () => {
      clock.advance(900);
      return { durationMs: 7, value: null };
    });
    expect(runner.steps.map((s) => [s.started_at, s.duration_ms])).toEqual([
      ["2026-03-01T10:00:00.000Z", 250],
      ["2026-03-01T10:00:00.250Z", 7],
    ]);
  });

  test("input, output and a returned error are recorded redacted", async () => {
    const { runner } = setup();
    const r = await runner.run({ kind: "filter", name: "filter" }, async (step) => {
      step.setInput({ url: `https://x.test/?key=${SECRET}` });
      return { status: "failed", output: { echoed: `Bearer ${SECRET}` }, error: `bad key ${SECRET}`, logs: ["l"], value: null };
    });
    expect(r.state).toBe("done");
    const text = JSON.stringify(runner.steps);
    expect(text).not.toContain(SECRET);
    expect(runner.steps[0]).toMatchObject({ status: "failed", error: "bad key [redacted]", logs: ["l"], output: { echoed: "Bearer [redacted]" } });
  });

  test("a thrown error is recorded redacted as a failed step, with an ActionError's output, and handed back", async () => {
    const { runner } = setup();
    const err = new ActionError(`provider refused ${SECRET}`, { retryable: true, output: { body: `token=${SECRET}` } });
    const r = await runner.run({ kind: "action", name: "http", index: 0 }, async (step) => {
      step.setInput({ headers: { authorization: SECRET } });
      throw err;
    });
    expect(r).toMatchObject({ state: "failed", error: err });
    expect(runner.steps[0]).toMatchObject({
      status: "failed",
      error: "provider refused [redacted]",
      input: { headers: { authorization: "[redacted]" } },
      output: { body: "token=[redacted]" },
    });
  });

  test("a database error from the body is rethrown, not recorded as the step's failure", async () => {
    const { runner } = setup();
    const full = Object.assign(new Error("database or disk is full"), { code: "SQLITE_FULL" });
    await expect(
      runner.run({ kind: "action", name: "http", index: 0 }, async () => {
        throw full;
      }),
    ).rejects.toBe(full);
    expect(runner.steps).toEqual([]);
  });

  test("input and output over 64 KB are capped and the step is marked truncated; redaction happens before the cut", async () => {
    const { runner } = setup();
    const big = "x".repeat(LIMITS.storedPayloadBytes) + SECRET;
    await runner.run({ kind: "action", name: "http", index: 0 }, async (step) => {
      step.setInput({ body: big });
      return { output: { echoed: big }, value: null };
    });
    const step = runner.steps[0]!;
    expect(step.truncated).toBe(true);
    expect(Buffer.byteLength(JSON.stringify(step.input))).toBeLessThanOrEqual(LIMITS.storedPayloadBytes);
    expect(Buffer.byteLength(JSON.stringify(step.output))).toBeLessThanOrEqual(LIMITS.storedPayloadBytes);
    expect(JSON.stringify(step)).not.toContain(SECRET.slice(0, 12));
    const small = setup();
    await small.runner.run({ kind: "action", name: "http", index: 0 }, async (s) => {
      s.setInput({ body: "short" });
      return { output: { ok: true }, value: null };
    });
    expect(small.runner.steps[0]!.truncated).toBeUndefined();
  });

  test("the steps so far are stored before the next step runs, not after the last one", async () => {
    const { runner, saves } = setup();
    const seenAtStart: number[] = [];
    for (const index of [0, 1, 2]) {
      await runner.run({ kind: "action", name: "http", index }, async () => {
        seenAtStart.push(saves.length);
        return { output: { n: index }, value: null };
      });
    }
    // Before step 1 the store held step 0; before step 2, steps 0 and 1; the last is the run's to store when it finishes.
    expect(seenAtStart).toEqual([0, 1, 2]);
    expect(saves.map((s) => s.map((x) => x.index))).toEqual([[0], [0, 1]]);
  });

  test("a checkpoint that finds the claim taken over runs nothing more", async () => {
    const { runner } = setup({ save: () => false });
    await runner.run({ kind: "filter", name: "filter" }, async () => ({ value: null }));
    let ran = false;
    const r = await runner.run({ kind: "action", name: "http", index: 0 }, async () => {
      ran = true;
      return { value: null };
    });
    expect(r).toEqual({ state: "lost" });
    expect(ran).toBe(false);
  });

  test("saveProgress stores the running step with the steps before it, and a retry resumes from that progress", async () => {
    const { runner, saves } = setup();
    await runner.run({ kind: "action", name: "discord", index: 0 }, async (step) => {
      void step.saveProgress({ sent: 1 });
      expect(saves.at(-1)).toMatchObject([{ status: "running", progress: { sent: 1 } }]);
      throw new ActionError("429", { retryable: true });
    });
    const retry = setup({ earlier: runner.steps });
    let resumedFrom: unknown;
    await retry.runner.run({ kind: "action", name: "discord", index: 0 }, async (step) => {
      resumedFrom = step.record.progress;
      return { value: null };
    });
    expect(resumedFrom).toEqual({ sent: 1 });
  });
});
