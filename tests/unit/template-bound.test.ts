import { describe, expect, test } from "vitest";
import type { Run } from "@/lib/db/store";
import { checkDefinition, type Definition } from "@/lib/definition";
import { renderTemplate } from "@/lib/template";
import { planTimed, TIMED_KEY_CHARS } from "@/lib/timed/plan";
import { MAX_RESPONSE_BYTES, renderWebhookResponse } from "@/lib/webhooks/respond";

/**
 * A render with a size limit stops at the limit: a template that names a sender's big field many
 * times costs about the limit, not the text it would make. Each `big` below counts its reads, so
 * these show the work not done, not only the length of the result.
 */
function countingBig(size: number) {
  const reads = { n: 0 };
  const value = "x".repeat(size);
  const body = {};
  Object.defineProperty(body, "big", { enumerable: true, get: () => (reads.n++, value) });
  return { body, reads };
}

describe("bounded template rendering", () => {
  test("renderTemplate with maxLength evaluates no expression after the limit is reached and says it cut", () => {
    const { body, reads } = countingBig(900_000);
    const r = renderTemplate("{{trigger.big}}".repeat(100), { trigger: body }, { maxLength: 64 * 1024 });
    expect(reads.n).toBe(1);
    expect(r.value.length).toBe(64 * 1024);
    expect(r.truncated).toBe(true);
    // Under the limit nothing changes, and nothing says it was cut.
    const small = renderTemplate("a{{trigger.n}}b", { trigger: { n: 1 } }, { maxLength: 3 });
    expect(small).toEqual({ value: "a1b", warnings: [], secretsUsed: [] });
    // A cut never leaves half of a surrogate pair.
    expect(renderTemplate("{{trigger.e}}", { trigger: { e: "ab😀" } }, { maxLength: 3 }).value).toBe("ab");
    expect(renderTemplate("plain text, no expression", { trigger: {} }, { maxLength: 5 })).toMatchObject({ value: "plain", truncated: true });
  });

  test("respond with data renders at most 64 KB of a template that names a 900 KB sender field 500 times", () => {
    const { body, reads } = countingBig(900_000);
    const run = { id: "r1", status: "succeeded", attempt: 1, steps: [] } as unknown as Run;
    const answer = renderWebhookResponse({ respond_body: "{{trigger.body.big}}".repeat(500) }, run, { body });
    expect(reads.n).toBe(1);
    expect(Buffer.byteLength(answer.body)).toBe(MAX_RESPONSE_BYTES);
    // Multi-byte text is cut by bytes, never inside a character.
    const wide = renderWebhookResponse({ respond_body: "{{trigger.body.t}}" }, run, { body: { t: "é".repeat(MAX_RESPONSE_BYTES) } });
    expect(Buffer.byteLength(wide.body)).toBe(MAX_RESPONSE_BYTES);
    expect(wide.body).toBe("é".repeat(MAX_RESPONSE_BYTES / 2));
  });

  test("a timed subject id that would render a sender's big field many times stops at its bound and is not used as the record", () => {
    const { body, reads } = countingBig(900_000);
    const checked = checkDefinition({
      version: 1,
      trigger: { type: "webhook", config: {} },
      timed: { subject: { id: "{{trigger.body.big}}".repeat(25), version: "1" } },
      actions: [{ type: "note", config: { filename: "n.md", content: "hi" }, timing: { at: "10m" } }],
    });
    expect(checked.ok).toBe(true);
    const plan = planTimed({ appletId: "a1", definition: (checked as { definition: Definition }).definition, payload: { body }, eventId: "e1", receivedAt: Date.parse("2026-03-07T12:00:00Z"), maxAttempts: 1 });
    expect(reads.n).toBe(1);
    expect(plan.warnings).toContain(`timed: the subject id ${"{{trigger.body.big}}".repeat(25)} renders longer than ${TIMED_KEY_CHARS} characters, so it is not used`);
    // Planned as a record of its own (the event), not under a 90 MB key.
    expect(plan.write?.runs[0]?.cancelKey).toBe("a1:event:e1");
  });
});
