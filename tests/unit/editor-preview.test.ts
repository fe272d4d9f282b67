import { afterEach, beforeEach, describe, expect, test, vi } from "vitest";
import { createPreviewRunner } from "@/components/editor/previewRunner";

/**
 * The editor preview's timing without a browser: fake timers stand in for the pause in typing,
 * and each request is a promise the test answers by hand, so the order of answers is chosen.
 */
interface Sent {
  body: string;
  signal: AbortSignal;
  answer(value: string): void;
}

function harness() {
  const sent: Sent[] = [];
  const answers: { body: string; answer: string }[] = [];
  let starts = 0;
  const runner = createPreviewRunner<string>({
    delayMs: 400,
    request: (body, signal) =>
      new Promise((resolve) => {
        signal.addEventListener("abort", () => resolve(null));
        sent.push({ body, signal, answer: resolve });
      }),
    onStart: () => starts++,
    onAnswer: (body, answer) => answers.push({ body, answer }),
  });
  return { runner, sent, answers, starts: () => starts };
}

describe("preview runner", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  test("edits in quick succession send one request, with the last edit, once typing pauses", async () => {
    const { runner, sent } = harness();
    runner.schedule("a");
    await vi.advanceTimersByTimeAsync(300);
    runner.schedule("ab");
    await vi.advanceTimersByTimeAsync(300);
    runner.schedule("abc");
    expect(sent).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(399);
    expect(sent).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(sent.map((s) => s.body)).toEqual(["abc"]);
  });

  test("a newer request aborts the one in flight, and the old answer never lands, even when it comes last", async () => {
    const { runner, sent, answers } = harness();
    runner.now("old");
    runner.now("new");
    expect(sent.map((s) => s.body)).toEqual(["old", "new"]);
    expect(sent[0]!.signal.aborted).toBe(true);
    expect(sent[1]!.signal.aborted).toBe(false);
    sent[1]!.answer("rendered new");
    sent[0]!.answer("rendered old");
    await vi.runAllTimersAsync();
    expect(answers).toEqual([{ body: "new", answer: "rendered new" }]);
  });

  test("the pause does not send again what Preview has just sent", async () => {
    const { runner, sent } = harness();
    runner.now("same");
    runner.schedule("same");
    await vi.advanceTimersByTimeAsync(1000);
    expect(sent).toHaveLength(1);
    runner.schedule("changed");
    await vi.advanceTimersByTimeAsync(400);
    expect(sent.map((s) => s.body)).toEqual(["same", "changed"]);
  });

  test("unschedule drops the pending send; cancel also aborts the request in flight and forgets what was sent", async () => {
    const { runner, sent, answers, starts } = harness();
    runner.schedule("pending");
    runner.unschedule();
    await vi.advanceTimersByTimeAsync(1000);
    expect(sent).toHaveLength(0);

    runner.now("flying");
    runner.cancel();
    expect(sent[0]!.signal.aborted).toBe(true);
    await vi.runAllTimersAsync();
    expect(answers).toEqual([]);
    // After a reset the same request is worth sending again (another sample may answer it).
    runner.schedule("flying");
    await vi.advanceTimersByTimeAsync(400);
    expect(sent.map((s) => s.body)).toEqual(["flying", "flying"]);
    expect(starts()).toBe(2);
  });
});
