import type { RunStatus } from "./types/runs";
import type { StoredWait, WaitResolution } from "./types";

/** A `run_waits` row joined with its run's status, as both engines hand it back. */
export interface WaitRaw {
  run_id: string;
  seq: number | string;
  applet_id: string;
  step_id: string;
  kind: string;
  resume_at: string | null;
  resume_as: string | null;
  timeout_at: string | null;
  detail: string | null;
  resolution: string | null;
  resolved_at: string | null;
  resolved_by: string | null;
  output: string | null;
  created_at: string;
  run_status: string;
}

const parsed = (text: string | null): unknown => {
  if (text === null) return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
};

export function toWait(r: WaitRaw): StoredWait {
  return {
    runId: r.run_id,
    seq: Number(r.seq),
    appletId: r.applet_id,
    stepId: r.step_id,
    kind: r.kind as StoredWait["kind"],
    resumeAt: r.resume_at,
    resumeAs: r.resume_as as StoredWait["resumeAs"],
    timeoutAt: r.timeout_at,
    detail: (parsed(r.detail) as Record<string, unknown> | null) ?? {},
    resolution: r.resolution as WaitResolution | null,
    resolvedAt: r.resolved_at,
    resolvedBy: r.resolved_by,
    output: parsed(r.output),
    createdAt: r.created_at,
    runStatus: r.run_status as RunStatus,
  };
}

/** Stored outputs are JSON text in both engines (a call's body may be any JSON, or text). */
export const outputText = (v: unknown): string | null => (v === undefined ? null : JSON.stringify(v));

export const WAIT_COLUMNS = "w.run_id, w.seq, w.applet_id, w.step_id, w.kind, w.resume_at, w.resume_as, w.timeout_at, w.detail, w.resolution, w.resolved_at, w.resolved_by, w.output, w.created_at, r.status AS run_status";
