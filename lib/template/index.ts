import { FILTERS, toText, type FilterEnv } from "./filters";
import { parseTemplate, type Expression } from "./parse";

/**
 * Templates for action configs (spec "Templates"). Pure and total: whatever the template and the
 * context, rendering returns a string and warnings, never throws. One pass only: text that comes
 * out of the context (an ingredient containing `{{secrets.X}}`) is data and is never rendered again.
 *
 * Filter semantics worth knowing:
 * - `truncate:N` keeps N characters (code points, trailing whitespace dropped) and appends `…`,
 *   so the result has at most N + 1 characters; shorter text is unchanged.
 * - `default:'x'` applies to a missing value, null or "". A missing path followed by `default`
 *   anywhere in its chain does not warn: the template already says what to do about it.
 * - `date:'fmt'` takes an ISO string, an epoch number or numeric string (seconds below 1e11, so the
 *   10-digit 1772955000 is seconds; milliseconds above), or an RFC 2822 date; an ISO string without
 *   an offset is wall time in `opts.timezone`, and one inside a spring-forward gap is the first
 *   valid time after it (the scheduler's rule, from @whenthen/schedules).
 * - A config string that is exactly one `{{…}}` under a key listed in `typedKeys` keeps the JSON
 *   type of its value (number, boolean, null, object, array): `"amount": "{{trigger.body.amount}}"`
 *   in an http JSON body sends 59.9, not "59.9". Any other text around it makes it text.
 */

export type SecretResolver = (name: string) => string | undefined;

export interface TemplateContext {
  trigger: unknown;
  ai?: unknown;
  vars?: unknown;
  applet?: { id: string; name: string };
  run?: { id: string; attempt: number };
  now?: string;
  now_local?: string;
  /** Resolved lazily, only when a template names `secrets.X`. */
  secrets?: SecretResolver;
  [key: string]: unknown;
}

export interface RenderOptions {
  /** IANA name used by the `date` filter. Default "UTC". */
  timezone?: string;
  /**
   * renderConfig only: top-level config keys whose whole-value templates keep their value's JSON
   * type (an action's `typedConfig`: the http body, Sheets cells, Slack blocks, push tags).
   */
  typedKeys?: readonly string[];
  /**
   * renderTemplate only: the longest text wanted, in UTF-16 code units. Rendering stops there: the
   * expressions after it are not evaluated and `truncated` is set, so a template that names a big
   * ingredient 500 times costs about the limit (and one value), not the whole text it would make.
   */
  maxLength?: number;
}

export interface RenderResult {
  value: string;
  /** true when `maxLength` cut the text short (absent otherwise). */
  truncated?: true;
  warnings: string[];
  /**
   * The secret values used. When filters changed a secret (`{{secrets.T | urlencode}}`), the
   * changed form is listed too, so `redact` also removes what actually went out.
   */
  secretsUsed: string[];
}

class Collector implements FilterEnv {
  readonly warnings = new Set<string>();
  readonly secrets = new Set<string>();
  truncated = false;
  constructor(
    readonly timezone: string,
    readonly maxLength = Infinity,
  ) {}
  warn(message: string): void {
    this.warnings.add(message);
  }
}

export function renderTemplate(template: string, ctx: TemplateContext, opts?: RenderOptions): RenderResult {
  const out = new Collector(opts?.timezone ?? "UTC", opts?.maxLength);
  const value = renderInto(template, ctx, out);
  return { value, warnings: [...out.warnings], secretsUsed: [...out.secrets], ...(out.truncated ? { truncated: true as const } : {}) };
}

export function renderConfig<T>(
  config: T,
  ctx: TemplateContext,
  opts?: RenderOptions,
): { rendered: T; warnings: string[]; secretsUsed: string[] } {
  const out = new Collector(opts?.timezone ?? "UTC");
  const typed = new Set(opts?.typedKeys ?? []);
  const isRecord = typeof config === "object" && config !== null && !Array.isArray(config);
  const rendered = (
    isRecord && typed.size > 0
      ? Object.fromEntries(
          Object.entries(config as Record<string, unknown>).map(([key, value]) => [
            key,
            mapStrings(value, typed.has(key) ? (s) => renderTyped(s, ctx, out) : (s) => renderInto(s, ctx, out)),
          ]),
        )
      : mapStrings(config, (s) => renderInto(s, ctx, out))
  ) as T;
  return { rendered, warnings: [...out.warnings], secretsUsed: [...out.secrets] };
}

/**
 * A string that is exactly one expression → its value with its JSON type (a copy); anything else
 * → rendered text. A missing value is "" (and warns), as in text.
 */
function renderTyped(template: string, ctx: TemplateContext, out: Collector): unknown {
  const pieces = template.includes("{{") ? parseTemplate(template) : [];
  const only = pieces.length === 1 ? pieces[0] : undefined;
  if (only?.kind !== "expr") return renderInto(template, ctx, out);
  try {
    const value = evaluateValue(only.expr, ctx, out);
    if (value === null || typeof value === "number" || typeof value === "boolean") return typeof value === "number" && !Number.isFinite(value) ? toText(value, out) : value;
    if (typeof value === "object" && !(value instanceof Date)) {
      try {
        return JSON.parse(JSON.stringify(value)) as unknown;
      } catch (err) {
        out.warn(`cannot render value as JSON: ${err instanceof Error ? err.message : String(err)}`);
        return "";
      }
    }
    return toText(value, out);
  } catch (err) {
    out.warn(`error rendering ${only.expr.pathText}: ${err instanceof Error ? err.message : String(err)}`);
    return "";
  }
}

/**
 * The value a template that is exactly one `{{…}}` names, with its type (a list stays a list, not
 * its text): what a for_each iterates over. Null when the template is anything else (text around
 * it, two expressions). `value` is undefined when nothing is at the path.
 */
export function resolveValue(template: string, ctx: TemplateContext, opts?: RenderOptions): { expression: string; value: unknown; warnings: string[]; secretsUsed: string[] } | null {
  const pieces = typeof template === "string" && template.includes("{{") ? parseTemplate(template.trim()) : [];
  const only = pieces.length === 1 ? pieces[0] : undefined;
  if (only?.kind !== "expr") return null;
  const out = new Collector(opts?.timezone ?? "UTC");
  let value: unknown;
  try {
    value = evaluateValue(only.expr, ctx, out);
  } catch (err) {
    out.warn(`error rendering ${only.expr.pathText}: ${err instanceof Error ? err.message : String(err)}`);
  }
  return { expression: only.expr.pathText, value, warnings: [...out.warnings], secretsUsed: [...out.secrets] };
}

// Redaction lives in lib/secrets/redact (one redactor for everything stored or logged).
export { redact, secretForms } from "../secrets/redact";

/** The distinct `{{path}}` references of a template, as written, in order of first use. */
export function templatePaths(template: string): string[] {
  const paths = new Set<string>();
  try {
    for (const piece of parseTemplate(String(template))) {
      if (piece.kind === "expr") paths.add(piece.expr.pathText);
    }
  } catch {
    // Parsing is total by construction; this only guards the editor against a bug in it.
  }
  return [...paths];
}

function renderInto(template: string, ctx: TemplateContext, out: Collector): string {
  if (typeof template !== "string") return toText(template, out);
  if (!template.includes("{{")) return cut(template, out);
  let result = "";
  for (const piece of parseTemplate(template)) {
    if (result.length >= out.maxLength) return cut(result, out);
    if (piece.kind === "text") {
      result += piece.text;
    } else if (piece.kind === "invalid") {
      out.warn(`invalid template expression ${shorten(piece.text)}: ${piece.reason}`);
      result += piece.text;
    } else {
      try {
        result += evaluate(piece.expr, ctx, out);
      } catch (err) {
        // A context object with a throwing getter or a hostile Proxy must not take the run down.
        out.warn(`error rendering ${piece.expr.pathText}: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
  }
  return cut(result, out);
}

/** `text` within the collector's maxLength, never ending in half a surrogate pair; marks the cut. */
function cut(text: string, out: Collector): string {
  if (text.length <= out.maxLength) return text;
  out.truncated = true;
  const end = out.maxLength;
  const last = text.charCodeAt(end - 1);
  return text.slice(0, last >= 0xd800 && last <= 0xdbff ? end - 1 : end);
}

function evaluate(expr: Expression, ctx: TemplateContext, out: Collector): string {
  return toText(evaluateValue(expr, ctx, out), out);
}

/** The expression's value after its filters, before it becomes text; records the secrets used. */
function evaluateValue(expr: Expression, ctx: TemplateContext, out: Collector): unknown {
  const { found, value, secret } = resolve(ctx, expr.path);
  if (!found && !expr.filters.some((f) => f.name === "default")) {
    out.warn(`unresolved: ${expr.pathText}`);
  }
  let current: unknown = found ? value : undefined;
  for (const f of expr.filters) {
    const filter = FILTERS.get(f.name);
    if (!filter) {
      out.warn(`unknown filter: ${f.name}`);
      continue;
    }
    current = filter(current, f.args, out);
  }
  if (secret) {
    const text = toText(current, out);
    out.secrets.add(secret);
    if (text !== "" && !text.includes(secret)) out.secrets.add(text);
  }
  return current;
}

const hasOwn = (obj: object, key: string): boolean => Object.prototype.hasOwnProperty.call(obj, key);

interface Resolved {
  found: boolean;
  value?: unknown;
  /** The non-empty secret value this expression started from. */
  secret?: string;
}

function resolve(ctx: TemplateContext, path: string[]): Resolved {
  if (path[0] === "secrets") {
    const resolver = hasOwn(ctx, "secrets") ? ctx.secrets : undefined;
    const name = path[1];
    if (path.length !== 2 || name === undefined || typeof resolver !== "function") return { found: false };
    const value = resolver(name);
    if (typeof value !== "string") return { found: false };
    return { found: true, value, secret: value === "" ? undefined : value };
  }
  let current: unknown = ctx;
  for (const key of path) {
    // Own properties only: `constructor`, `__proto__` and the prototype chain are never reachable.
    if (typeof current === "string") {
      const boxed = Object(current) as Record<string, unknown>;
      if (!hasOwn(boxed, key)) return { found: false };
      current = boxed[key];
    } else if (typeof current === "object" && current !== null) {
      if (!hasOwn(current, key)) return { found: false };
      current = (current as Record<string, unknown>)[key];
    } else {
      return { found: false };
    }
  }
  return current === undefined ? { found: false } : { found: true, value: current };
}

/** Deep copy of plain objects and arrays with `fn` applied to every string leaf; cycles kept. */
function mapStrings(value: unknown, fn: (s: string) => unknown): unknown {
  const seen = new Map<object, unknown>();
  const walk = (v: unknown): unknown => {
    if (typeof v === "string") return fn(v);
    if (typeof v !== "object" || v === null) return v;
    const done = seen.get(v);
    if (done !== undefined) return done;
    if (Array.isArray(v)) {
      const copy: unknown[] = [];
      seen.set(v, copy);
      for (const item of v) copy.push(walk(item));
      return copy;
    }
    const proto: unknown = Object.getPrototypeOf(v);
    if (proto !== Object.prototype && proto !== null) return v; // Date, Buffer, class instances: not config data
    const copy: Record<string, unknown> = proto === null ? (Object.create(null) as Record<string, unknown>) : {};
    seen.set(v, copy);
    for (const key of Object.keys(v)) {
      // defineProperty, because assigning an own "__proto__" key (JSON.parse makes them) would set the prototype.
      Object.defineProperty(copy, key, {
        value: walk((v as Record<string, unknown>)[key]),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return copy;
  };
  return walk(value);
}

function shorten(s: string): string {
  return s.length > 80 ? s.slice(0, 80) + "…" : s;
}
