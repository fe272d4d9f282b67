import { errorBody } from "./api-client";

/** A planned run of an applet as GET /api/applets/:id/planned lists it (#17). */
export interface PlannedItem {
  id: string;
  actionIndex: number;
  actionType: string;
  dueAt: string;
  status: string;
  reason: string | null;
  originalDueAt?: string | null;
  explanation: string;
  subjectId: string;
  subjectVersion: number | string;
  runId?: string | null;
}

type Answer<T> = { ok: true; value: T } | { ok: false; error: string };

/** GET /api/applets/:id/planned?status=&limit=: never throws; a dropped connection is an error said in words. */
export async function plannedRuns(appletId: string, status: "pending" | "cancelled" | "skipped" | "done", limit: number): Promise<Answer<PlannedItem[]>> {
  const res = await fetch(`/api/applets/${encodeURIComponent(appletId)}/planned?${new URLSearchParams({ status, limit: String(limit) }).toString()}`).catch(() => null);
  if (!res) return { ok: false, error: "network error" };
  if (!res.ok) return { ok: false, error: (await errorBody(res)).error ?? `failed (${res.status})` };
  return { ok: true, value: ((await res.json()) as { items: PlannedItem[] }).items };
}
