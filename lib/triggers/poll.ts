import { toText } from "../core/text";
import { isDeepStrictEqual } from "node:util";
import type { ScheduleTiming } from "@whenthen/schedules";
import { z } from "zod";
import { errorMessage } from "../core/errors";
import { capJson } from "../core/limits";
import { parseTemplate } from "../template/parse";
import { field } from "../plugin";
import type { PolledTrigger, PollContext } from "./types";

/**
 * The JSON poll trigger: fetch a URL, pick a value by path, fire on a change or on the edge of a
 * condition. Fetching is the only I/O; `extractPath`, `conditionHolds` and `decide` are pure.
 */

const POLL_TIMEOUT_MS = 15_000;
export const POLL_DEFAULT_INTERVAL_MIN = 5;
/** Bytes of response read; a larger body is an error (a cut JSON document does not parse anyway). */
export const POLL_MAX_BYTES = 5 * 1024 * 1024;

export const CONDITIONS = ["changed", "equals", "not_equals", "gt", "lt", "contains"] as const;
export type Condition = (typeof CONDITIONS)[number];
/** How the editor's "Fire when" select, and the messages about a target, say each condition. */
const CONDITION_LABELS: Record<Condition, string> = {
  changed: "the value changes",
  equals: "it becomes equal to the target",
  not_equals: "it stops being equal to the target",
  gt: "it rises above the target",
  lt: "it drops below the target",
  contains: "it starts containing the target",
};

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** Path segments of `data.price`, `items[0].status`, `["odd key"]`; a string saying why not. */
export function parsePath(path: string): string[] | string {
  const trimmed = path.trim();
  if (trimmed === "") return [];
  // The template parser already knows dot and bracket paths; a synthetic root segment lets a path
  // start with a bracket (`[0].price` into a top-level array).
  const pieces = parseTemplate(`{{$${trimmed.startsWith("[") ? "" : "."}${trimmed}}}`);
  const only = pieces[0];
  if (pieces.length !== 1 || !only || only.kind !== "expr" || only.expr.filters.length > 0) {
    return `poll: path "${path}" is not a dot/bracket path such as data.price or items[0].status`;
  }
  return only.expr.path.slice(1);
}

/** The value at `segments`, reading own properties only; `found: false` when any step is missing. */
export function extractPath(root: unknown, segments: string[]): { found: boolean; value: unknown } {
  let cur: unknown = root;
  for (const seg of segments) {
    if (cur === null || typeof cur !== "object" || !Object.hasOwn(cur, seg)) return { found: false, value: undefined };
    cur = (cur as Record<string, unknown>)[seg];
  }
  return { found: true, value: cur };
}

/** Numbers, and strings that are entirely a number ("42", " 3.5 "); null otherwise. */
export function toNumber(v: unknown): number | null {
  if (typeof v === "number") return Number.isFinite(v) ? v : null;
  if (typeof v === "string" && v.trim() !== "") {
    const n = Number(v.trim());
    return Number.isFinite(n) ? n : null;
  }
  return null;
}

/** Equal as JSON values, or as numbers when both sides read as numbers ("100" equals 100). */
function looselyEqual(a: unknown, b: unknown): boolean {
  if (isDeepStrictEqual(a, b)) return true;
  const x = toNumber(a);
  const y = toNumber(b);
  return x !== null && y !== null && x === y;
}

/** Whether `condition` holds for `value` against `target` (not used for `changed`). Pure. */
export function conditionHolds(condition: Exclude<Condition, "changed">, value: unknown, target: unknown): boolean {
  switch (condition) {
    case "equals":
      return looselyEqual(value, target);
    case "not_equals":
      return !looselyEqual(value, target);
    case "gt":
    case "lt": {
      const v = toNumber(value);
      const t = toNumber(target);
      if (v === null || t === null) return false;
      return condition === "gt" ? v > t : v < t;
    }
    case "contains":
      if (typeof value === "string") return value.includes(String(target));
      if (Array.isArray(value)) return value.some((v) => looselyEqual(v, target));
      return false;
  }
}

/**
 * What the trigger remembers between polls (trigger_state.last_value): the value, whether the
 * condition held, and which path/condition/target it was computed for, so an edited applet starts
 * over instead of comparing against a value read under another rule.
 */
export interface PollMemory {
  value: unknown;
  matched: boolean;
  rule: string;
}

const ruleOf = (c: Pick<PollConfig, "url" | "path" | "condition" | "target">): string => JSON.stringify([c.url, c.path, c.condition, c.target ?? null]);

function isMemory(v: unknown): v is PollMemory {
  return typeof v === "object" && v !== null && "value" in v && typeof (v as PollMemory).matched === "boolean" && typeof (v as PollMemory).rule === "string";
}

/**
 * Fire or not. First poll (or first after the rule changed): remember, fire nothing. `changed`
 * fires when the value differs (deep equality); the others fire on the edge, when the condition
 * holds now and did not on the previous poll. Pure.
 */
export function decide(config: PollConfig, previous: unknown, value: unknown): { fire: boolean; previousValue: unknown; memory: PollMemory } {
  const rule = ruleOf(config);
  const matched = config.condition === "changed" ? false : conditionHolds(config.condition, value, config.target);
  const memory: PollMemory = { value, matched, rule };
  if (!isMemory(previous) || previous.rule !== rule) return { fire: false, previousValue: null, memory };
  const fire = config.condition === "changed" ? !isDeepStrictEqual(previous.value, value) : matched && !previous.matched;
  return { fire, previousValue: previous.value, memory };
}

const httpUrl = z
  .string()
  .trim()
  .min(1, "required")
  .max(2000)
  .refine((u) => /^https?:\/\//i.test(u) || u.startsWith("{{"), "must be an http or https URL");

const targetSchema = z.union([z.string().max(10_000), z.number(), z.boolean(), z.null()]);

export const pollConfigSchema = z
  .strictObject({
    url: field(httpUrl, { label: "URL", kind: "text", required: true, placeholder: "https://api.example.com/price" }),
    method: field(z.enum(["GET", "POST"]).default("GET"), { label: "Method", kind: "select", options: [{ value: "GET", label: "GET" }, { value: "POST", label: "POST" }] }),
    /** Values are templates, so `Bearer {{secrets.API_TOKEN}}` works. */
    headers: field(
      z
        .record(z.string().regex(HEADER_NAME, "not a valid header name").max(200), z.string().max(8000))
        .refine((h) => Object.keys(h).length <= 50, "at most 50 headers")
        .default({}),
      { label: "Headers", kind: "json", placeholder: '{"Authorization": "Bearer {{secrets.API_TOKEN}}"}', help: "A JSON object; values may use {{secrets.NAME}}." },
    ),
    body: field(z.string().max(64 * 1024).optional(), { label: "Body", kind: "textarea", showWhen: { field: "method", equals: ["POST"] }, help: "Sent with POST; may use {{secrets.NAME}}." }),
    interval_min: field(z.number().int().min(1, "at least 1 minute").max(10_080).default(POLL_DEFAULT_INTERVAL_MIN), { label: "Check every (minutes)", kind: "number", placeholder: "5" }),
    path: field(
      z
        .string()
        .max(500)
        .default("")
        .superRefine((p, ctx) => {
          const parsed = parsePath(p);
          if (typeof parsed === "string") ctx.addIssue({ code: "custom", message: parsed });
        }),
      { label: "Value path", kind: "text", placeholder: "data.price", help: "Dot and bracket path into the JSON, e.g. items[0].status. Empty: the whole response." },
    ),
    condition: field(z.enum(CONDITIONS).default("changed"), {
      label: "Fire when",
      kind: "select",
      options: CONDITIONS.map((value) => ({ value, label: CONDITION_LABELS[value] })),
      help: "Except for 'changes', it fires once when the condition becomes true, then again only after it was false.",
    }),
    target: field(targetSchema.optional(), { label: "Target", kind: "text", showWhen: { field: "condition", equals: ["equals", "not_equals", "gt", "lt", "contains"] } }),
  })
  .superRefine((c, ctx) => {
    if (c.condition !== "changed" && c.target === undefined) {
      ctx.addIssue({ code: "custom", path: ["target"], message: `poll: "target" is required to fire when ${CONDITION_LABELS[c.condition]}` });
    }
    if ((c.condition === "gt" || c.condition === "lt") && c.target !== undefined && toNumber(c.target) === null) {
      ctx.addIssue({ code: "custom", path: ["target"], message: `poll: "target" must be a number to fire when ${CONDITION_LABELS[c.condition]}, got ${JSON.stringify(c.target)}` });
    }
  });
export type PollConfig = z.infer<typeof pollConfigSchema>;

export const pollTiming = (config: PollConfig): ScheduleTiming => ({ interval: `${config.interval_min}m` });

interface Fetched {
  status: number;
  json: unknown;
  value: unknown;
}

async function fetchValue(config: PollConfig, ctx: PollContext): Promise<Fetched> {
  const headers: Record<string, string> = { accept: "application/json" };
  for (const [name, template] of Object.entries(config.headers)) headers[name.toLowerCase()] = await ctx.render(template);
  const url = config.url.includes("{{") ? await ctx.render(config.url) : config.url;
  let body: string | undefined;
  if (config.method === "POST" && config.body !== undefined) {
    body = await ctx.render(config.body);
    if (headers["content-type"] === undefined) headers["content-type"] = looksLikeJson(body) ? "application/json" : "text/plain; charset=utf-8";
  }
  // The configured URL (never the rendered one, which may carry a secret) is what errors show.
  const shown = config.url;
  const res = await ctx.http(url, { method: config.method, headers, body, timeoutMs: POLL_TIMEOUT_MS, maxBytes: POLL_MAX_BYTES });
  if (res.status < 200 || res.status > 299) throw new Error(`poll: ${shown} answered HTTP ${res.status}`);
  if (res.truncated) throw new Error(`poll: ${shown} sent more than ${POLL_MAX_BYTES / 1024 / 1024} MB`);
  let json: unknown;
  try {
    json = JSON.parse(res.text());
  } catch {
    throw new Error(`poll: ${shown} did not answer JSON (content-type ${res.headers["content-type"] ?? "none"})`);
  }
  const segments = parsePath(config.path);
  if (typeof segments === "string") throw new Error(segments);
  const at = extractPath(json, segments);
  if (!at.found) throw new Error(`poll: path "${config.path}" is not in the response of ${shown}`);
  return { status: res.status, json, value: at.value };
}

function looksLikeJson(s: string): boolean {
  try {
    JSON.parse(s);
    return true;
  } catch {
    return false;
  }
}

export const pollTrigger: PolledTrigger<PollConfig, "poll"> = {
  type: "poll",
  feed: "polled",
  label: "Poll a JSON URL",
  description: "Checks a JSON API on an interval and fires when a value changes or crosses a threshold.",
  configSchema: pollConfigSchema,
  exampleConfig: { url: "https://api.example.com/widgets/price", method: "GET", headers: {}, interval_min: 5, path: "data.price", condition: "lt", target: 100 },
  urlFields: ["url"],
  previewReads: ["url", "method", "headers", "body", "path", "condition", "target"],
  ingredients: [
    { name: "value", description: "The value at the path now" },
    { name: "previous_value", description: "The value at the previous check" },
    { name: "url", description: "The URL polled" },
    { name: "path", description: "The path read" },
    { name: "changed_at", description: "When the change was seen (ISO UTC)" },
    { name: "response", description: "The whole JSON response (cut at 64 KB)" },
    { name: "status", description: "HTTP status" },
  ],
  sample: {
    value: 90,
    previous_value: 120,
    url: "https://api.example.com/widgets/price",
    path: "data.price",
    changed_at: "2026-03-07T12:05:00.000Z",
    response: { data: { symbol: "WIDGET", price: 90, currency: "EUR" } },
    status: 200,
  },

  timing: pollTiming,
  timingOfInvalid: (raw) => ({ interval: `${toText(raw.interval_min ?? POLL_DEFAULT_INTERVAL_MIN)}m` }),
  // Looked at right away; a lost slot is not polled again (the next poll sees the change anyway).
  firstRun: "now",
  refireLostSlot: false,

  async poll(config, state, ctx, slot) {
    const now = ctx.clock.now().toISOString();
    let fetched: Fetched;
    try {
      // Redacted before deciding: a response that echoes a secret is compared, remembered and
      // fired in the same redacted form, so it neither leaks nor looks changed on every poll.
      fetched = ctx.redact(await fetchValue(config, ctx));
    } catch (err) {
      // The scheduler redacts the whole result (this error shows the rendered URL) before storing it.
      return { events: [], state: { lastPolledAt: now, lastError: errorMessage(err), errorCount: state.errorCount + 1 } };
    }
    const d = decide(config, state.lastValue, fetched.value);
    const after = { lastPolledAt: now, lastValue: d.memory, lastError: null, errorCount: 0 };
    if (!d.fire) return { events: [], state: after };
    const capped = capJson(fetched.json);
    return {
      // One event per poll slot at most; the slot as key keeps a repeated slot from firing twice.
      events: [
        {
          dedupeKey: slot.toISOString(),
          payload: {
            value: fetched.value,
            previous_value: d.previousValue,
            url: config.url,
            path: config.path,
            changed_at: now,
            response: capped.value,
            ...(capped.truncated ? { response_truncated: true } : {}),
            status: fetched.status,
          },
        },
      ],
      state: after,
    };
  },

  async preview(config, ctx) {
    const fetched = ctx.redact(await fetchValue(config, ctx));
    const matched = config.condition === "changed" ? null : conditionHolds(config.condition, fetched.value, config.target);
    return { status: fetched.status, value: fetched.value, path: config.path, condition_holds_now: matched, response: capJson(fetched.json).value };
  },
};
