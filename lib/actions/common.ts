import { z } from "zod";
import type { Clock } from "../core/clock";
import { ActionError } from "../core/errors";
import type { SafeResponse } from "../net/types";

/**
 * Pieces every outbound action shares. A config is validated twice by the same schema: as stored
 * (templates like `{{secrets.SLACK_WEBHOOK}}` not yet rendered) and as rendered. A value that still
 * holds `{{` therefore passes the schema's format checks, and `run` checks the rendered value
 * again: ingredient data is never re-rendered, so a rendered value may legitimately contain `{{`.
 */
export const hasTemplate = (value: string): boolean => value.includes("{{");

/** Shows a user value in a message without letting a huge or multi-line value swamp it. */
export const quote = (value: string, max = 80): string =>
  JSON.stringify(value.length > max ? `${value.slice(0, max)}…` : value);

/**
 * A required template field. Blank (or whitespace only) is refused: stored blank it could never
 * render to anything, rendered blank it would post an empty message.
 */
export const requiredText = (action: string, field: string) =>
  z.string().refine((v) => v.trim() !== "", {
    error: `${action}: "${field}" is empty (or rendered to an empty string); it is required`,
  });

/** An http(s) URL, or a template that must render to one. Optional fields accept "". */
export function urlField(action: string, field: string, opts: { optional: true }): z.ZodOptional<z.ZodString>;
export function urlField(action: string, field: string, opts?: { optional?: false }): z.ZodString;
export function urlField(action: string, field: string, opts: { optional?: boolean } = {}) {
  const base = z.string().superRefine((v, ctx) => {
    const s = v.trim();
    if (s === "") {
      if (!opts.optional) ctx.addIssue({ code: "custom", message: `${action}: "${field}" is empty; it is required` });
      return;
    }
    if (hasTemplate(s)) return;
    const problem = httpUrlProblem(s);
    if (problem) ctx.addIssue({ code: "custom", message: `${action}: "${field}" ${problem}` });
  });
  return opts.optional ? base.optional() : base;
}

function httpUrlProblem(value: string): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return `must be an http(s) URL, got ${quote(value, 40)}`;
  }
  // Only the scheme is shown: webhook URLs carry their secret in the path.
  if (url.protocol !== "http:" && url.protocol !== "https:") return `must be an http(s) URL, got a "${url.protocol}" URL`;
  return null;
}

/** Run-time check of a rendered required field: the spec's "empty render fails, clearly". */
export function requireRendered(action: string, field: string, value: string | undefined): string {
  if (value === undefined || value.trim() === "") {
    throw new ActionError(`${action}: "${field}" rendered to an empty string`, { retryable: false });
  }
  return value;
}

/** Run-time check of a rendered URL. */
export function requireHttpUrl(action: string, field: string, value: string | undefined): string {
  const s = requireRendered(action, field, value).trim();
  const problem = httpUrlProblem(s);
  if (problem) throw new ActionError(`${action}: "${field}" ${problem}`, { retryable: false });
  return s;
}

/**
 * A whole number within bounds that may also be a template. The form stores strings, so "3"
 * coerces to 3; "" means unset. A template passes as a string and is coerced after rendering.
 */
export const templatableInt = (action: string, field: string, min: number, max: number) =>
  z
    .union([z.number(), z.string()])
    .transform((v, ctx): number | string | undefined => {
      if (typeof v === "string") {
        const s = v.trim();
        if (s === "") return undefined;
        if (hasTemplate(s)) return s;
        if (/^[+-]?\d+$/.test(s)) return checkBounds(Number(s), v);
        return checkBounds(Number.NaN, v);
      }
      return checkBounds(v, v);

      function checkBounds(n: number, input: unknown): number {
        if (!Number.isInteger(n) || n < min || n > max) {
          ctx.addIssue({
            code: "custom",
            message: `${action}: "${field}" must be a whole number${rangeText(min, max)}, got ${JSON.stringify(input)}`,
          });
          return z.NEVER;
        }
        return n;
      }
    })
    // Outside the transform, so the key is optional in the parsed type too.
    .optional();

const rangeText = (min: number, max: number): string =>
  Number.isFinite(min) && Number.isFinite(max) ? ` from ${min} to ${max}` : "";

/** After rendering, a templatable number must be a number. */
export function resolveInt(action: string, field: string, value: number | string | undefined, min: number, max: number): number | undefined {
  if (value === undefined || (typeof value === "string" && value.trim() === "")) return undefined;
  const n = typeof value === "number" ? value : /^[+-]?\d+$/.test(value.trim()) ? Number(value.trim()) : Number.NaN;
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new ActionError(`${action}: "${field}" must be a whole number${rangeText(min, max)}, got ${JSON.stringify(value)}`, {
      retryable: false,
    });
  }
  return n;
}

/** Longest wait we honour from a provider: a bogus `Retry-After: 99999999` must not park a run for years. */
const MAX_RETRY_AFTER_MS = 24 * 60 * 60 * 1000;

/** `Retry-After` is either delta-seconds or an HTTP date (RFC 9110 §10.2.3). */
export function parseRetryAfter(header: string | undefined, clock: Clock): number | undefined {
  if (!header) return undefined;
  const s = header.trim();
  let ms: number;
  if (/^\d+(\.\d+)?$/.test(s)) ms = Math.ceil(Number(s) * 1000);
  else {
    const at = Date.parse(s);
    if (Number.isNaN(at)) return undefined;
    ms = at - clock.now().getTime();
  }
  return Math.min(Math.max(ms, 0), MAX_RETRY_AFTER_MS);
}

export const clampRetryAfter = (ms: number): number => Math.min(Math.max(Math.ceil(ms), 0), MAX_RETRY_AFTER_MS);

/** Kept on a failed step so the run log shows what the provider said. */
export const failureOutput = (res: SafeResponse) => ({ status: res.status, body: res.text().slice(0, 2000) });

/**
 * The spec's rule for every HTTP provider: 429 and 5xx may succeed later, every other 4xx (408
 * included) will not. A request that never got an answer is a network error, retryable elsewhere.
 */
export function isRetryableStatus(status: number): boolean {
  return status === 429 || (status >= 500 && status <= 599);
}

/** The ActionError for a non-2xx answer. `detail` is the provider's own explanation, when parsed. */
export function statusError(action: string, res: SafeResponse, clock: Clock, detail?: string, retryAfterMs?: number): ActionError {
  const retryable = isRetryableStatus(res.status);
  const said = detail ?? res.text().trim().slice(0, 300);
  const wait = retryable ? (retryAfterMs ?? parseRetryAfter(res.headers["retry-after"], clock)) : undefined;
  return new ActionError(`${action}: HTTP ${res.status}${said ? ` — ${said}` : ""}`, {
    retryable,
    retryAfterMs: wait,
    output: failureOutput(res),
  });
}

export const isSuccess = (status: number): boolean => status >= 200 && status < 300;

/** A provider's JSON object answer, or null when the body is not one. */
export function parseJsonObject(res: SafeResponse): Record<string, unknown> | null {
  try {
    const v: unknown = JSON.parse(res.text());
    return typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}
