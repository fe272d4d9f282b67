import type { Step, StepKind } from "../db/store/types/runs";

/** The run journal's entries and a run's status are the store's model (lib/db/store/types/runs.ts). */
export type { RunStatus, Step, StepKind } from "../db/store/types/runs";

/** Kinds that only decide where the run goes: they send nothing, so they are evaluated again on a retry. */
export const DECIDING_KINDS: readonly StepKind[] = ["if", "paths", "for_each", "stop"];

/** The id of a journal entry; old rows (version 1, no id) get the id version 1's step list gives the same step. */
export function stepIdOf(s: Pick<Step, "id" | "kind" | "index">): string {
  if (s.id) return s.id;
  if (s.kind === "filter") return "filter";
  if (s.kind === "transform") return "ai";
  if (s.kind === "action") return `action_${(s.index ?? 0) + 1}`;
  return s.kind;
}

/** The key a retry finds an earlier attempt's entry by: the step's id and its iteration. */
export function journalKey(s: Pick<Step, "id" | "kind" | "index" | "iteration">): string {
  return s.iteration?.length ? `${stepIdOf(s)}[${s.iteration.join(".")}]` : stepIdOf(s);
}
