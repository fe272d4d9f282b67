import type { Logger } from "../core/log";
import { sanitizeFilename } from "../files/sanitize";

/**
 * The one redactor: every field a run or a poll stores or logs (step input, output, progress,
 * error, warnings, logs, the run's error, the app log) goes through it, with every secret value
 * the run resolved. A secret is removed in every form it can come back in, not only as written:
 *
 * - encodings on the way out: percent-encoded by a URL or a form (`+` for spaces), JSON-escaped;
 * - a URL secret in its normalised form, as the URL parser and error messages show it:
 *   `http://LOCALHOST:80/a/../hook\x?token=T` → `http://localhost/hook/x?token=T`, with and
 *   without its credentials;
 * - its token parts: a URL secret's path segments and query values of useful length (a Slack or
 *   Discord webhook's ids and token echoed back in a provider's error body);
 * - the name a file gets when the secret is part of a note's file name (`+` → `_`), and the
 *   address an address parser makes of it (quotes and backslashes dropped);
 * - a secret's beginning cut off by `…` (a message that shortened a value before quoting it).
 *
 * Built per run or per poll and dropped with it: a long-lived cache would keep secret values in
 * memory after the run.
 */
export const REDACTED = "[redacted]";

/** Token parts shorter than this are ordinary text too often to remove everywhere. */
const MIN_PART = 8;
/** A secret's beginning this long, directly before `…`, is removed as a cut-off secret. */
const MIN_CUT_PREFIX = 6;

export interface Redactor {
  /** Adds secret values (and forms a renderer already produced); empty ones are ignored. */
  add(values: Iterable<string>): void;
  /** A copy of `value` with every form of every secret added so far replaced (the value itself when none was). */
  redact<T>(value: T): T;
  /** Whether any secret was added. */
  readonly active: boolean;
}

export function createRedactor(initial: Iterable<string> = []): Redactor {
  const secrets = new Set<string>();
  let forms: string[] = [];
  let pattern: RegExp | null = null;
  const redactor: Redactor = {
    add(values) {
      let changed = false;
      for (const v of values) {
        if (typeof v === "string" && v !== "" && !secrets.has(v)) {
          secrets.add(v);
          changed = true;
        }
      }
      if (changed) {
        forms = [...new Set([...secrets].flatMap((s) => [...secretForms(s), ...tokenParts(s)]))].sort((a, b) => b.length - a.length);
        // Longest first, so a secret that contains another is removed whole.
        pattern = new RegExp(forms.map(escapeRegExp).join("|"), "g");
      }
    },
    redact<T>(value: T): T {
      const p = pattern;
      if (!p) return value;
      return mapChangedStrings(value, (s) => cutPrefixes(s.replace(p, REDACTED), forms)) as T;
    },
    get active() {
      return pattern !== null;
    },
  };
  redactor.add(initial);
  return redactor;
}

/**
 * Deep copy of `value` with every occurrence of every secret value replaced by "[redacted]"
 * (also inside longer strings; object keys excluded). Empty values are ignored.
 */
export function redact<T>(value: T, secretValues: Iterable<string>): T {
  return createRedactor(secretValues).redact(value);
}

/** A logger that redacts its messages and fields with `redactor` (and so do its children). */
export function redactingLogger(log: Logger, redactor: Redactor): Logger {
  // An Error is a class instance the redactor leaves alone; its message is what a log shows.
  const plain = (fields: Record<string, unknown>) =>
    Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, v instanceof Error ? { name: v.name, message: v.message } : v]));
  const wrap =
    (emit: Logger["info"]): Logger["info"] =>
    (msg, fields) =>
      redactor.active ? emit(redactor.redact(msg), fields && redactor.redact(plain(fields))) : emit(msg, fields);
  return {
    debug: wrap((msg, fields) => log.debug(msg, fields)),
    info: wrap((msg, fields) => log.info(msg, fields)),
    warn: wrap((msg, fields) => log.warn(msg, fields)),
    error: wrap((msg, fields) => log.error(msg, fields)),
    child: (scope) => redactingLogger(log.child(scope), redactor),
  };
}

/**
 * A secret value and the encodings it can come back in: an error message shows `url.toString()`
 * (the URL parser percent-encodes a space in a path but keeps `|`), a form body or query uses
 * encodeURIComponent or `+` for spaces, a stored JSON text escapes quotes and backslashes. A form
 * shorter than the value (the URL parser dropped dot segments or a tab) is not used unless the
 * value is a whole URL: a short form may be ordinary text. A secret in a host name (lower-cased,
 * punycoded) is not covered.
 */
export function secretForms(value: string): string[] {
  const forms = new Set<string>([value]);
  const add = (make: () => string | undefined, minLength = value.length) => {
    try {
      const form = make();
      if (form !== undefined && form !== "" && form.length >= minLength) forms.add(form);
    } catch {
      // A lone surrogate makes encodeURIComponent throw: that form cannot be produced either.
    }
  };
  add(() => encodeURIComponent(value));
  add(() => encodeURI(value));
  add(() => new URLSearchParams({ k: value }).toString().slice(2));
  add(() => {
    const u = new URL(`http://h.invalid/${value}`);
    return u.search === "" && u.hash === "" ? u.pathname.slice(1) : undefined;
  });
  add(() => {
    const u = new URL(`http://h.invalid/?${value}`);
    return u.hash === "" ? u.search.slice(1) : undefined;
  });
  add(() => new URL(`http://h.invalid/#${value}`).hash.slice(1));
  add(() => {
    const u = new URL("http://h.invalid/");
    u.username = value;
    return u.username;
  });
  add(() => {
    const u = new URL("http://h.invalid/");
    u.password = value;
    return u.password;
  });
  const url = absoluteUrl(value);
  if (url) {
    // What the URL parser makes of the whole value, and that without its credentials (how
    // safe-fetch names a URL in its errors), shorter or not: scheme and host make them specific.
    add(() => url.href, MIN_PART);
    add(() => (url.href.endsWith("/") && !value.endsWith("/") ? url.href.slice(0, -1) : undefined), MIN_PART);
    add(() => {
      const bare = new URL(url.href);
      bare.username = "";
      bare.password = "";
      return bare.href === url.href ? undefined : bare.href;
    }, MIN_PART);
  }
  // An address parser drops quotes and backslashes: `"a\b"@x.test` is sent to `ab@x.test`.
  add(() => value.replace(/["\\]/g, ""), MIN_PART);
  // A note's file name keeps only [a-zA-Z0-9._ -]: `a+b` is written as `a_b`.
  add(() => {
    const named = sanitizeFilename(value, "");
    return named !== value && /[A-Za-z0-9].*[A-Za-z0-9].*[A-Za-z0-9].*[A-Za-z0-9]/.test(named) ? named : undefined;
  }, MIN_PART);
  for (const form of [...forms]) add(() => JSON.stringify(form).slice(1, -1), MIN_PART);
  return [...forms];
}

/**
 * The parts of a URL secret that are secret on their own: path segments, query values and
 * credentials of at least MIN_PART characters, as written and decoded. Plain lower-case words
 * (`services`, `webhooks`, `incoming-webhook`) name the API, not the account, and stay.
 */
export function tokenParts(value: string): string[] {
  const url = absoluteUrl(value);
  if (!url) return [];
  const parts = new Set<string>();
  const add = (part: string) => {
    for (const p of [part, safeDecode(part)]) {
      if (p.length >= MIN_PART && !/^[a-z]+(?:[-_.][a-z]+)*$/.test(p)) parts.add(p);
    }
  };
  for (const segment of url.pathname.split("/")) add(segment);
  for (const [, v] of url.searchParams) {
    add(v);
    add(encodeURIComponent(v));
  }
  add(url.username);
  add(url.password);
  return [...parts];
}

function absoluteUrl(value: string): URL | null {
  if (!/^\s*https?:/i.test(value)) return null;
  try {
    return new URL(value);
  } catch {
    return null;
  }
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** A form's beginning (at least MIN_CUT_PREFIX characters) right before a `…`: a secret that was cut, not quoted whole. */
function cutPrefixes(s: string, forms: string[]): string {
  if (!s.includes("…")) return s;
  let out = "";
  let from = 0;
  for (let at = s.indexOf("…"); at >= 0; at = s.indexOf("…", at + 1)) {
    let cut = 0;
    for (const form of forms) {
      for (let n = Math.min(form.length - 1, at - from); n >= MIN_CUT_PREFIX && n > cut; n--) {
        if (s.startsWith(form.slice(0, n), at - n)) {
          cut = n;
          break;
        }
      }
    }
    out += cut > 0 ? s.slice(from, at - cut) + REDACTED : s.slice(from, at);
    from = at;
  }
  return out + s.slice(from);
}

/**
 * `fn` applied to every string leaf of plain objects and arrays. Containers are copied only where
 * a string inside them changed (the rest is shared), so redacting what holds no secret costs no
 * copy. A cycle (never in stored JSON) becomes "[circular]" rather than a way back to the
 * unredacted original. Keys are copied with defineProperty, so a `__proto__` key stays a key.
 */
function mapChangedStrings(value: unknown, fn: (s: string) => string): unknown {
  const done = new Map<object, unknown>();
  const open = new Set<object>();
  const walk = (v: unknown): unknown => {
    if (typeof v === "string") return fn(v);
    if (typeof v !== "object" || v === null) return v;
    if (done.has(v)) return done.get(v);
    if (open.has(v)) return "[circular]";
    const proto: unknown = Object.getPrototypeOf(v);
    if (!Array.isArray(v) && proto !== Object.prototype && proto !== null) return v; // Date, Buffer, class instances: not config data
    open.add(v);
    let result: unknown;
    if (Array.isArray(v)) {
      const next = v.map(walk);
      result = next.some((n, i) => n !== v[i]) ? next : v;
    } else {
      const obj = v as Record<string, unknown>;
      const keys = Object.keys(obj);
      const next = keys.map((k) => walk(obj[k]));
      if (next.some((n, i) => n !== obj[keys[i]!])) {
        const copy: Record<string, unknown> = proto === null ? (Object.create(null) as Record<string, unknown>) : {};
        keys.forEach((k, i) => Object.defineProperty(copy, k, { value: next[i], enumerable: true, writable: true, configurable: true }));
        result = copy;
      } else result = v;
    }
    open.delete(v);
    done.set(v, result);
    return result;
  };
  return walk(value);
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
