import type { MetaTrigger } from "@/lib/api/queries";

/** Pure helpers shared by the screens (server and client). */

export const CRON_PRESETS: readonly { label: string; cron: string }[] = [
  { label: "Every hour", cron: "0 * * * *" },
  { label: "Every day at 9:00", cron: "0 9 * * *" },
  { label: "Weekdays at 9:00", cron: "0 9 * * 1-5" },
  { label: "Every Monday at 8:00", cron: "0 8 * * 1" },
  { label: "Every 15 minutes", cron: "*/15 * * * *" },
];

export interface IngredientOption {
  /** What gets inserted, e.g. `{{trigger.body.title}}`. */
  value: string;
  label: string;
  description?: string;
}

export interface IngredientGroup {
  label: string;
  options: IngredientOption[];
}

const IDENT = /^[A-Za-z_$][\w$]*$/;

/**
 * Leaf paths of a sample payload: `body` → `body.title`, `body.customer.name`; arrays are entered
 * at `[0]`. The trigger's declared ingredients are the top level; this is what lets the picker offer
 * `{{trigger.body.title}}` for a webhook whose ingredient is only `body`.
 */
export function samplePaths(value: unknown, prefix: string, depth = 4, out: string[] = []): string[] {
  if (depth > 0 && Array.isArray(value) && value.length > 0) {
    return samplePaths(value[0], `${prefix}[0]`, depth - 1, out);
  }
  if (depth > 0 && value && typeof value === "object" && !Array.isArray(value) && Object.keys(value).length > 0) {
    for (const [k, v] of Object.entries(value)) {
      samplePaths(v, IDENT.test(k) ? `${prefix}.${k}` : `${prefix}[${JSON.stringify(k)}]`, depth - 1, out);
    }
    return out;
  }
  out.push(prefix);
  return out;
}

/** Names the filter code sets with `set('name', …)`, in order of first appearance. */
export function filterVarNames(code: string | undefined): string[] {
  if (!code) return [];
  const names = new Set<string>();
  for (const m of code.matchAll(/\bset\(\s*(['"`])([A-Za-z_$][\w$]*)\1/g)) names.add(m[2]!);
  return [...names];
}

/**
 * The "Insert ingredient" groups. The trigger's fields come from `sample`, the one the editor tests
 * with (edited, fetched or a past event), else the trigger's built-in one: a field the user added
 * to the sample (body.amount) is offered, and the trigger's declared ingredients always are.
 */
export function ingredientGroups(opts: {
  trigger: MetaTrigger | undefined;
  sample?: Record<string, unknown>;
  transformOutput?: string | null;
  filterCode?: string | null;
  secrets: string[];
}): IngredientGroup[] {
  const groups: IngredientGroup[] = [];
  const t = opts.trigger;
  if (t) {
    const options: IngredientOption[] = [];
    const sample = opts.sample ?? t.sample;
    const nested = (name: string) => {
      const value = sample[name];
      // Nested fields of an object or array ingredient, from the sample (body.title, attachments[0].url).
      if (value && typeof value === "object") {
        for (const p of samplePaths(value, `trigger.${name}`)) {
          if (p !== `trigger.${name}`) options.push({ value: `{{${p}}}`, label: p });
        }
      }
    };
    for (const ing of t.ingredients) {
      options.push({ value: `{{trigger.${ing.name}}}`, label: `trigger.${ing.name}`, description: ing.description });
      nested(ing.name);
    }
    // Top-level fields of the sample the trigger does not declare (a past event's extra field).
    const declared = new Set(t.ingredients.map((i) => i.name));
    for (const name of Object.keys(sample)) {
      if (declared.has(name) || !IDENT.test(name)) continue;
      options.push({ value: `{{trigger.${name}}}`, label: `trigger.${name}`, description: "in the sample" });
      nested(name);
    }
    groups.push({ label: `Trigger: ${t.label}`, options });
  }
  if (opts.transformOutput) {
    groups.push({ label: "AI transform", options: [{ value: `{{ai.${opts.transformOutput}}}`, label: `ai.${opts.transformOutput}` }] });
  }
  const vars = filterVarNames(opts.filterCode ?? undefined);
  if (vars.length) groups.push({ label: "Filter vars", options: vars.map((v) => ({ value: `{{vars.${v}}}`, label: `vars.${v}` })) });
  if (opts.secrets.length) groups.push({ label: "Secrets", options: opts.secrets.map((s) => ({ value: `{{secrets.${s}}}`, label: `secrets.${s}` })) });
  groups.push({
    label: "Run",
    options: [
      { value: "{{applet.name}}", label: "applet.name" },
      { value: "{{run.id}}", label: "run.id" },
      { value: "{{now}}", label: "now", description: "the run's start, UTC" },
      { value: "{{now_local}}", label: "now_local", description: "the run's start in the applet's time zone" },
    ],
  });
  return groups;
}

/** Replaces the selection [start, end) of `value` with `text`; returns the new value and caret. */
export function insertAt(value: string, start: number, end: number, text: string): { value: string; caret: number } {
  const s = Math.max(0, Math.min(start, value.length));
  const e = Math.max(s, Math.min(end, value.length));
  return { value: value.slice(0, s) + text + value.slice(e), caret: s + text.length };
}

export interface TemplateSegment {
  text: string;
  /** A `{{ … }}` expression. */
  expr: boolean;
  /** The expression's path rendered as nothing in the preview. */
  unresolved: boolean;
}

/** Splits a template into text and expressions, marking expressions whose path did not resolve. */
export function templateSegments(template: string, unresolved: string[]): TemplateSegment[] {
  const missing = new Set(unresolved.map((u) => u.trim()));
  const out: TemplateSegment[] = [];
  let last = 0;
  for (const m of template.matchAll(/(?<!\\)\{\{([\s\S]*?)\}\}/g)) {
    if (m.index > last) out.push({ text: template.slice(last, m.index), expr: false, unresolved: false });
    const path = (m[1] ?? "").split("|")[0]!.trim();
    out.push({ text: m[0], expr: true, unresolved: missing.has(path) });
    last = m.index + m[0].length;
  }
  if (last < template.length) out.push({ text: template.slice(last), expr: false, unresolved: false });
  return out;
}


export function formatDuration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return "–";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  const m = Math.floor(ms / 60_000);
  return `${m} min ${Math.round((ms % 60_000) / 1000)} s`;
}

/** "3 min ago", "in 2 h": for times the reader wants relative to now. */
export function relativeTime(iso: string, now: number): string {
  const diff = new Date(iso).getTime() - now;
  const abs = Math.abs(diff);
  const fmt = (n: number, unit: string) => (diff < 0 ? `${n} ${unit} ago` : `in ${n} ${unit}`);
  if (abs < 45_000) return diff < 0 ? "just now" : "in a few seconds";
  if (abs < 3_600_000) return fmt(Math.round(abs / 60_000), "min");
  if (abs < 86_400_000) return fmt(Math.round(abs / 3_600_000), "h");
  return fmt(Math.round(abs / 86_400_000), "d");
}

export const pretty = (v: unknown): string => (typeof v === "string" ? v : JSON.stringify(v, null, 2) ?? String(v));

/**
 * A run or event id short enough for a table cell. Ids are UUIDv7: the first characters are the
 * creation time and repeat across runs made in the same minute, so the tail (random) is used.
 */
export const shortId = (id: string): string => id.replace(/-/g, "").slice(-8);

/** Splits a token (`SLACK_WEBHOOK_OPS`, `{{secrets.X}}`) after `_` and `.`, where a line may break. */
export function tokenBreaks(token: string): string[] {
  return token.split(/(?<=[_.])/);
}

/** "2 items in the feed:" or "10 items in the feed; the first 3:", never "the first three" of two. */
export function fetchedItemsSummary(count: number, shown: number): string {
  const items = `${count} item${count === 1 ? "" : "s"} in the feed`;
  if (shown === 0) return `${items}.`;
  return shown < count ? `${items}; the first ${shown}:` : `${items}:`;
}

/**
 * The filter code's placeholder, written against this trigger's own sample: `trigger.subject` for
 * mail, `trigger.title` for a feed, `trigger.value` for a poll, `trigger.body.title` for a webhook.
 */
export function filterPlaceholder(sample: Record<string, unknown> | undefined): string {
  const paths = samplePaths(sample ?? {}, "trigger");
  const valueAt = (p: string): unknown =>
    p
      .replace(/^trigger\.?/, "")
      .split(/\.|\[(?:"([^"]*)"|(\d+))\]/)
      .filter((x) => x !== undefined && x !== "")
      .reduce<unknown>((v, k) => (v && typeof v === "object" ? (v as Record<string, unknown>)[k] : undefined), sample);
  const preferred = ["title", "subject", "text", "summary", "name", "message"];
  const strings = paths.filter((p) => /^[\w.]+$/.test(p) && typeof valueAt(p) === "string");
  const number = paths.find((p) => /^[\w.]+$/.test(p) && typeof valueAt(p) === "number");
  // A poll's point is its number (trigger.value): a text field is used only when it is a real one.
  const text = strings.find((p) => preferred.includes(p.split(".").pop()!)) ?? (number ? undefined : strings[0]);
  if (text) {
    const leaf = text.split(".").pop();
    return `if (!${text}) skip('no ${leaf}');\nset('upper', ${text}.toUpperCase());`;
  }
  if (number) {
    const leaf = number.split(".").pop();
    return `if (${number} > 100) skip('${leaf} is above 100');\nset('doubled', ${number} * 2);`;
  }
  return "if (!trigger) skip('nothing to do');";
}
