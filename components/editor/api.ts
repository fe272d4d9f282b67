import type { Problem } from "@/lib/definition";
import type { EditorDefinition as Definition } from "./draft";
import { api, errorBody, type InferResponseType } from "@/lib/ui/api-client";
import type { FieldMeta } from "@/lib/plugin";
import { fetchProblemsInWords } from "./problems";

/**
 * Every request the editor makes, in one place: the components call these and never `fetch`.
 * Requests and answers are typed from the routes (lib/api/routes/applets.ts) through the typed
 * client. Each answers in the editor's terms (ok with the body, or an error said for the user) and
 * never throws, so a dropped connection is a message, not an unhandled rejection.
 */

type Answer<T> = { ok: true; value: T } | { ok: false; error: string };

/** A request that could not be sent (offline, aborted) is null, not an exception. */
const sent = <T>(request: Promise<T>): Promise<T | null> => request.catch(() => null);

/** The status as a number: the typed client knows the statuses a route answers, not the 400/413 its validation throws. */
const statusOf = (res: { status: number }): number => res.status;

// ---- save ----------------------------------------------------------------------------------------

export type SaveAnswer = { ok: true; id: string } | { ok: false; problems: Problem[] } | { ok: false; error: string };

/** POST /api/applets for a new applet, PUT /api/applets/:id for an existing one. */
export async function saveApplet(id: string | undefined, body: { name: string; definition: Definition | null }): Promise<SaveAnswer> {
  const res = id ? await sent(api.api.applets[":id"].$put({ param: { id }, json: body })) : await sent(api.api.applets.$post({ json: body }));
  if (!res) return { ok: false, error: "network error: nothing was saved" };
  if (res.ok) return { ok: true, id: (await res.json()).applet.id };
  const refused = await errorBody(res);
  if (statusOf(res) === 400) {
    const problems = refused.problems ?? [];
    return { ok: false, problems: problems.length ? problems : [{ path: "", message: refused.error ?? "invalid applet" }] };
  }
  return { ok: false, error: refused.error ?? `save failed (${res.status})` };
}

// ---- preview -------------------------------------------------------------------------------------

export interface PreviewRequest {
  definition: Definition;
  sample: Record<string, unknown>;
  vars: Record<string, unknown>;
  ai: Record<string, string>;
}

export type PreviewAnswerBody = InferResponseType<(typeof api.api.applets.preview)["$post"], 200>;
export type PreviewAction = PreviewAnswerBody["actions"][number];
/** One step of a step list's preview walk (lib/executor/preview-walk.ts). */
export type PreviewStepEntry = PreviewAnswerBody["steps"][number];

/** POST /api/applets/preview with the request already serialized (the debounce compares the text); `null` when it was aborted. */
export async function previewApplet(body: string, signal: AbortSignal): Promise<Answer<PreviewAnswerBody> | null> {
  const res = await sent(api.api.applets.preview.$post({ json: JSON.parse(body) as PreviewRequest }, { init: { signal } }));
  if (signal.aborted) return null;
  if (!res) return { ok: false, error: "network error" };
  if (res.ok) return { ok: true, value: await res.json() };
  return { ok: false, error: (await errorBody(res)).error ?? `preview failed (${res.status})` };
}

// ---- filter test ---------------------------------------------------------------------------------

export type FilterTestResult = InferResponseType<(typeof api.api.applets)["filter-test"]["$post"], 200>;

/** POST /api/applets/filter-test: the filter code in the sandbox against the sample event. */
export async function testFilter(code: string, sample: Record<string, unknown>): Promise<Answer<FilterTestResult>> {
  const res = await sent(api.api.applets["filter-test"].$post({ json: { code, sample } }));
  if (!res) return { ok: false, error: "network error" };
  if (res.ok) return { ok: true, value: await res.json() };
  return { ok: false, error: (await errorBody(res)).error ?? `failed (${res.status})` };
}

// ---- fetch now -----------------------------------------------------------------------------------

/** POST /api/triggers/fetch: the trigger's fetch (RSS, poll) without saving, to check its config. */
export async function fetchTrigger(type: string, fields: FieldMeta[], config: Record<string, unknown>): Promise<Answer<unknown>> {
  const res = await sent(api.api.triggers.fetch.$post({ json: { type, config } }));
  if (!res) return { ok: false, error: "network error" };
  if (res.ok) {
    const answer = await res.json();
    return answer.ok ? { ok: true, value: answer.result } : { ok: false, error: answer.error };
  }
  const refused = await errorBody(res);
  if (statusOf(res) === 400) {
    return { ok: false, error: fetchProblemsInWords(type, fields, refused.problems ?? []) || refused.error || "invalid config" };
  }
  return { ok: false, error: refused.error ?? `failed (${res.status})` };
}

// ---- samples -------------------------------------------------------------------------------------

export type PastEvent = InferResponseType<(typeof api.api.applets)[":id"]["events"]["$get"], 200>["events"][number];

/** GET /api/applets/:id/events: the applet's last 20 events, for the sample picker. */
export async function pastEvents(appletId: string): Promise<Answer<PastEvent[]>> {
  const res = await sent(api.api.applets[":id"].events.$get({ param: { id: appletId } }));
  if (!res) return { ok: false, error: "network error" };
  if (!res.ok) return { ok: false, error: (await errorBody(res)).error ?? `failed (${statusOf(res)})` };
  return { ok: true, value: (await res.json()).events };
}

/** A new applet saved disabled, so a webhook has its URL before anything can fire it. */
export async function saveDraft(body: { name: string; definition: Definition | null }): Promise<SaveAnswer> {
  const res = await sent(api.api.applets.$post({ json: { ...body, enabled: false } }));
  if (!res) return { ok: false, error: "network error: nothing was saved" };
  if (res.ok) return { ok: true, id: (await res.json()).applet.id };
  const refused = await errorBody(res);
  if (statusOf(res) === 400) {
    const problems = refused.problems ?? [];
    return { ok: false, problems: problems.length ? problems : [{ path: "", message: refused.error ?? "invalid applet" }] };
  }
  return { ok: false, error: refused.error ?? `save failed (${statusOf(res)})` };
}

// ---- timing preview ------------------------------------------------------------------------

export type TimingPreviewBody = InferResponseType<(typeof api.api.applets)["timing-preview"]["$post"], 200>;
/** One timed action planned against the sample: when it would run, or why it would not. */
export type TimingPreviewItem = TimingPreviewBody["items"][number];

/**
 * POST /api/applets/timing-preview with `{ definition, sample }` already serialized; `null` when it
 * was aborted. A definition that does not check yet (an offset still being typed) answers with its
 * problems, said as the preview's error; the save names their fields.
 */
export async function previewTiming(body: string, signal: AbortSignal): Promise<Answer<{ items: TimingPreviewItem[]; warnings: string[] }> | null> {
  const res = await sent(api.api.applets["timing-preview"].$post({ json: JSON.parse(body) as { definition: unknown; sample: Record<string, unknown> } }, { init: { signal } }));
  if (signal.aborted) return null;
  if (!res) return { ok: false, error: "network error" };
  if (!res.ok) return { ok: false, error: (await errorBody(res)).error ?? `preview failed (${statusOf(res)})` };
  // Aborted while the body was still arriving (a newer edit, leaving the page): nothing to say.
  const answer = await res.json().catch(() => null);
  if (signal.aborted) return null;
  if (!answer) return { ok: false, error: "the preview's answer was cut off" };
  if (answer.problems.length) return { ok: false, error: `fix the timing first (${answer.problems.map((p) => p.message).join("; ")})` };
  return { ok: true, value: { items: answer.items, warnings: answer.warnings } };
}
