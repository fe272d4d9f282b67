"use client";
import { AddStep } from "./AddStep";
import { useSteps } from "./context";
import { StepCard } from "./StepCard";
import type { ListRef, StepDraft } from "./tree";

/** A list of steps (the top level, or a branch's), each a card, and "Add step" at its end. */
export function StepList({ steps, where }: { steps: StepDraft[]; where: ListRef }) {
  const { dispatch } = useSteps();
  return (
    <div className="flex flex-col gap-3">
      {steps.length === 0 ? <p className="text-xs text-slate-500">No steps here yet.</p> : null}
      {steps.map((s, i) => (
        <StepCard key={s.key} step={s} index={i} count={steps.length} />
      ))}
      <AddStep compact={where.parent !== null} onAdd={(step) => dispatch({ kind: "addStep", step, where })} />
    </div>
  );
}
