import { sha256Hex } from "./sha256";

export interface RunIdParts {
  ruleId: string;
  stepId: string;
  subjectType: string;
  subjectId: string;
  subjectVersion: number;
  contactId: string | null | undefined;
}

/**
 * The id of a run: a hash of the rule, the step, the subject, the subject's version and the
 * contact. The same event planned twice gives the same ids, so storing it again changes nothing.
 * The parts are JSON-encoded as a list so that no choice of separators can make two different
 * tuples collide.
 */
export function runId(parts: RunIdParts): string {
  const key = JSON.stringify([parts.ruleId, parts.stepId, parts.subjectType, parts.subjectId, parts.subjectVersion, parts.contactId ?? null]);
  return `run_${sha256Hex(key).slice(0, 32)}`;
}
