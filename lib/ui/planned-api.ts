import { api, errorBody, type InferResponseType } from "./api-client";

/** A planned run of an applet as GET /api/applets/:id/planned lists it. */
export type PlannedItem = InferResponseType<(typeof api.api.applets)[":id"]["planned"]["$get"], 200>["items"][number];

type Answer<T> = { ok: true; value: T } | { ok: false; error: string };

/** GET /api/applets/:id/planned?status=&limit=: never throws; a dropped connection is an error said in words. */
export async function plannedRuns(appletId: string, status: "pending" | "cancelled" | "skipped" | "done", limit: number): Promise<Answer<PlannedItem[]>> {
  const res = await api.api.applets[":id"].planned.$get({ param: { id: appletId }, query: { status, limit: String(limit) } }).catch(() => null);
  if (!res) return { ok: false, error: "network error" };
  if (!res.ok) return { ok: false, error: (await errorBody(res)).error ?? `failed (${res.status})` };
  return { ok: true, value: (await res.json()).items };
}
