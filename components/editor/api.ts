import type { DefinitionJson, Problem } from "@/lib/ui/types";

/**
 * Every request the editor makes, in one place: the components call these and never `fetch`.
 * Each answers in the editor's terms (ok with the body, or an error said for the user) and
 * never throws, so a dropped connection is a message, not an unhandled rejection.
 */

type Answer<T> = { ok: true; value: T } | { ok: false; error: string };

async function post(path: string, body: unknown, init?: { method?: string; signal?: AbortSignal }): Promise<{ res: Response; json: Record<string, unknown> } | null> {
  const res = await fetch(path, { method: init?.method ?? "POST", headers: { "content-type": "application/json" }, body: typeof body === "string" ? body : JSON.stringify(body), signal: init?.signal }).catch(() => null);
  if (!res) return null;
  const json = ((await res.json().catch(() => null)) ?? {}) as Record<string, unknown>;
  return { res, json };
}

const errorOf = (json: Record<string, unknown>): string | undefined => (typeof json.error === "string" ? json.error : undefined);

// ---- save ----------------------------------------------------------------------------------------

export type SaveAnswer = { ok: true; id: string } | { ok: false; problems: Problem[] } | { ok: false; error: string };

/** POST /api/applets for a new applet, PUT /api/applets/:id for an existing one. */
export async function saveApplet(id: string | undefined, body: { name: string; definition: DefinitionJson | null }): Promise<SaveAnswer> {
  const answer = await post(id ? `/api/applets/${id}` : "/api/applets", body, { method: id ? "PUT" : "POST" });
  if (!answer) return { ok: false, error: "network error: nothing was saved" };
  const { res, json } = answer;
  if (res.status === 400) {
    const problems = Array.isArray(json.problems) ? (json.problems as Problem[]) : [];
    return { ok: false, problems: problems.length ? problems : [{ path: "", message: errorOf(json) ?? "invalid applet" }] };
  }
  const applet = json.applet as { id?: unknown } | undefined;
  if (!res.ok || typeof applet?.id !== "string") return { ok: false, error: errorOf(json) ?? `save failed (${res.status})` };
  return { ok: true, id: applet.id };
}

// ---- preview -------------------------------------------------------------------------------------

export interface PreviewRequest {
  definition: DefinitionJson;
  sample: Record<string, unknown>;
  vars: Record<string, unknown>;
  ai: Record<string, string>;
}

export interface PreviewAction {
  index: number;
  type: string;
  rendered: Record<string, unknown>;
  warnings: string[];
  unresolved: string[];
}

export interface PreviewAnswerBody {
  actions: PreviewAction[];
  problems: Problem[];
}

/** POST /api/applets/preview with the request already serialized; `null` when it was aborted. */
export async function previewApplet(body: string, signal: AbortSignal): Promise<Answer<PreviewAnswerBody> | null> {
  const answer = await post("/api/applets/preview", body, { signal });
  if (signal.aborted) return null;
  if (!answer) return { ok: false, error: "network error" };
  const { res, json } = answer;
  if (!res.ok || !Array.isArray(json.actions)) return { ok: false, error: errorOf(json) ?? `preview failed (${res.status})` };
  return { ok: true, value: { actions: json.actions as PreviewAction[], problems: Array.isArray(json.problems) ? (json.problems as Problem[]) : [] } };
}

// ---- filter test ---------------------------------------------------------------------------------

export interface FilterTestResult {
  vars: Record<string, unknown>;
  logs: string[];
  skipped: boolean;
  reason: string | null;
  error: string | null;
  duration_ms?: number;
}

/** POST /api/applets/filter-test: the filter code in the sandbox against the sample event. */
export async function testFilter(code: string, sample: Record<string, unknown>): Promise<Answer<FilterTestResult>> {
  const answer = await post("/api/applets/filter-test", { code, sample });
  if (!answer) return { ok: false, error: "network error" };
  const { res, json } = answer;
  if (!res.ok || !Array.isArray(json.logs)) return { ok: false, error: errorOf(json) ?? `failed (${res.status})` };
  return { ok: true, value: json as unknown as FilterTestResult };
}

// ---- fetch now -----------------------------------------------------------------------------------

/** POST /api/triggers/fetch: the trigger's fetch (RSS, poll) without saving, to check its config. */
export async function fetchTrigger(type: string, config: Record<string, unknown>): Promise<Answer<unknown>> {
  const answer = await post("/api/triggers/fetch", { type, config });
  if (!answer) return { ok: false, error: "network error" };
  const { res, json } = answer;
  if (res.status === 400) {
    const problems = Array.isArray(json.problems) ? (json.problems as Problem[]) : [];
    return { ok: false, error: problems.map((p) => `${p.path.replace(/^config\./, "")}: ${p.message}`).join("; ") || errorOf(json) || "invalid config" };
  }
  if (!res.ok || json.ok === false) return { ok: false, error: errorOf(json) ?? `failed (${res.status})` };
  return { ok: true, value: json.result };
}

// ---- samples -------------------------------------------------------------------------------------

export interface PastEvent {
  id: string;
  source: string;
  received_at: string;
  payload: Record<string, unknown>;
}

/** GET /api/applets/:id/events: the applet's last 20 events, for the sample picker. */
export async function pastEvents(appletId: string): Promise<Answer<PastEvent[]>> {
  const res = await fetch(`/api/applets/${encodeURIComponent(appletId)}/events`).catch(() => null);
  if (!res) return { ok: false, error: "network error" };
  const json = ((await res.json().catch(() => null)) ?? {}) as Record<string, unknown>;
  if (!res.ok || !Array.isArray(json.events)) return { ok: false, error: errorOf(json) ?? `failed (${res.status})` };
  return { ok: true, value: json.events as PastEvent[] };
}

/** A new applet saved disabled, so a webhook has its URL before anything can fire it. */
export async function saveDraft(body: { name: string; definition: DefinitionJson | null }): Promise<SaveAnswer> {
  const answer = await post("/api/applets", { ...body, enabled: false });
  if (!answer) return { ok: false, error: "network error: nothing was saved" };
  const { res, json } = answer;
  if (res.status === 400) {
    const problems = Array.isArray(json.problems) ? (json.problems as Problem[]) : [];
    return { ok: false, problems: problems.length ? problems : [{ path: "", message: errorOf(json) ?? "invalid applet" }] };
  }
  const applet = json.applet as { id?: unknown } | undefined;
  if (!res.ok || typeof applet?.id !== "string") return { ok: false, error: errorOf(json) ?? `save failed (${res.status})` };
  return { ok: true, id: applet.id };
}
