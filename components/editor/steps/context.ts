"use client";
import { createContext, useContext, type Dispatch } from "react";
import type { Meta } from "@/lib/api/queries";
import type { IngredientGroup } from "@/lib/ui/format";
import type { PreviewStepEntry } from "../api";
import type { DraftAction } from "../draft";
import type { PlacedProblems } from "../save-problems";
import type { AnchorOption } from "../timing";
import type { Preview } from "../usePreview";
import type { TimingPreview } from "../useTimingPreview";
import type { Fresh, StepDraft } from "./tree";

/** What every step card needs, handed down once instead of through every level of the tree. */
export interface StepsEnv {
  meta: Meta;
  dispatch: Dispatch<DraftAction>;
  /** A change of the step list (./tree's functions). */
  change: (f: (steps: StepDraft[], fresh: Fresh) => StepDraft[]) => void;
  problems: PlacedProblems;
  warnings?: PlacedProblems;
  groups: IngredientGroup[];
  preview: Preview;
  isNew: boolean;
  anchors: AnchorOption[];
  timingPreview: TimingPreview;
  /** The sample the conditions' values are typed by: `{ trigger: sample }`. */
  sample: Record<string, unknown>;
  /** Each written step's definition path, by key. */
  paths: Map<number, string>;
  /** Each action step's place among all actions in written order (the preview's `index`), by key. */
  actionIndex: Map<number, number>;
  /** Each top-level action step's place among the top-level actions (a timing's index), by key. */
  topIndex: Map<number, number>;
  /** The preview walk's entries by step path (several for a step inside a for_each). */
  walk: Map<string, PreviewStepEntry[]>;
  /** Keys for new conditions and paths (React keys only: unique among their siblings). */
  freshKey: Fresh;
}

export const StepsContext = createContext<StepsEnv | null>(null);

export function useSteps(): StepsEnv {
  const env = useContext(StepsContext);
  if (!env) throw new Error("step cards are rendered inside StepsEditor");
  return env;
}
