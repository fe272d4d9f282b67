import { storedDefinition } from "../definition";
import { walkSteps, type WaitStep } from "../definition/types";
import { checkSignature, type SignatureConfig } from "../webhooks/signature";
import { PRESETS, type Headers, type VerifyPreset } from "../webhooks/verify";

type Signature = SignatureConfig & { verify: VerifyPreset };

/**
 * The signature checks that guard a call to a run's resume URL (a `for_call` wait's `signature`,
 * the webhook trigger's presets). Pure: the applet's definition, the call and its secrets in, a
 * verdict out.
 *
 * The wait the run reached names its step: its check, or none. A call that comes before the run
 * reached its wait (kept, and counted when it does) cannot know which `for_call` step that will be:
 * it must then pass the check of one of the applet's signed `for_call` steps, if any is signed.
 */
export function callSignatures(definition: Record<string, unknown>, stepId: string | null): Signature[] {
  const out: Signature[] = [];
  for (const { step } of walkSteps(storedDefinition(definition).steps)) {
    if (step.type !== "wait") continue;
    const w = step as WaitStep;
    if (w.kind !== "for_call") continue;
    if (stepId !== null && w.id !== stepId) continue;
    if (w.signature) out.push(w.signature);
  }
  return out;
}

export type CallVerdict = { ok: true } | { ok: false; reasons: string[]; checks: string };

/** Whether the call passes one of `signatures` (all pass when there are none). `render` resolves `{{secrets.NAME}}`. */
export function checkCall(signatures: Signature[], req: { rawBody: Buffer; headers: Headers }, render: (template: string) => string, nowMs: number): CallVerdict {
  if (signatures.length === 0) return { ok: true };
  const reasons: string[] = [];
  for (const s of signatures) {
    const verdict = checkSignature(s.verify, s, req, render, nowMs);
    if (verdict.ok) return { ok: true };
    reasons.push(`${s.verify}: ${verdict.reason}`);
  }
  const checks = [...new Set(signatures.map((s) => PRESETS[s.verify].label))].join(" or ");
  return { ok: false, reasons, checks };
}
