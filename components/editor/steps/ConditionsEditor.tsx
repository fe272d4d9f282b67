"use client";
import { IngredientPicker } from "../IngredientPicker";
import { useSteps } from "./context";
import { isGroup, needsValue, type ConditionGroup, type ConditionRow, type Fresh } from "./tree";

/** The operators, in the words the editor shows (the ops of lib/definition's step conditions). */
export const OP_WORDS: [string, string][] = [
  ["eq", "is"],
  ["ne", "is not"],
  ["gt", "is more than"],
  ["gte", "is at least"],
  ["lt", "is less than"],
  ["lte", "is at most"],
  ["contains", "contains"],
  ["not_contains", "does not contain"],
  ["starts_with", "starts with"],
  ["ends_with", "ends with"],
  ["matches", "matches (pattern)"],
  ["exists", "exists"],
  ["is_empty", "is empty"],
  ["in", "is one of"],
  ["not_in", "is none of"],
];
const LIST_OPS = new Set(["in", "not_in"]);

/** The sample's value at a condition's field (`trigger.body.amount`), which types the value input. */
export function sampleValueAt(sample: Record<string, unknown>, field: string): unknown {
  let v: unknown = sample;
  for (const k of field.split(".")) {
    if (v === null || typeof v !== "object") return undefined;
    v = (v as Record<string, unknown>)[k];
  }
  return v;
}

/** An ingredient as a condition's field: `{{trigger.body.amount}}` → `trigger.body.amount`. */
export const fieldOf = (ingredient: string): string => ingredient.replace(/^\{\{\s*/, "").replace(/\s*\}\}$/, "").split("|")[0]!.trim();

/** A group of conditions (all / any), its rows and nested groups; `label` names it for screen readers. */
export function ConditionsEditor({ group, onChange, label, fresh, depth = 0 }: { group: ConditionGroup; onChange: (g: ConditionGroup) => void; label: string; fresh: Fresh; depth?: number }) {
  const set = (i: number, item: ConditionRow | ConditionGroup) => onChange({ ...group, items: group.items.map((x, j) => (j === i ? item : x)) });
  const remove = (i: number) => onChange({ ...group, items: group.items.filter((_, j) => j !== i) });
  return (
    <fieldset className={`flex flex-col gap-2 rounded-md p-2 ring-1 ring-slate-200 ${depth ? "bg-slate-50" : "bg-white"}`} aria-label={label}>
      <div className="flex flex-wrap items-center gap-2 text-xs text-slate-700">
        <select aria-label={`${label}: match`} className="rounded-md border-0 py-1 pr-7 pl-2 text-xs ring-1 ring-slate-300" value={group.mode} onChange={(e) => onChange({ ...group, mode: e.target.value as "all" | "any" })}>
          <option value="all">All of these hold</option>
          <option value="any">Any of these holds</option>
        </select>
      </div>
      {group.items.map((item, i) =>
        isGroup(item) ? (
          <div key={item.key} className="flex items-start gap-2">
            <div className="min-w-0 flex-1">
              <ConditionsEditor group={item} onChange={(g) => set(i, g)} label={`${label} › group ${i + 1}`} fresh={fresh} depth={depth + 1} />
            </div>
            <button type="button" className="text-xs text-slate-500 hover:text-red-700" onClick={() => remove(i)} aria-label={`Remove group ${i + 1} of ${label}`}>
              ✕
            </button>
          </div>
        ) : (
          <ConditionRowEditor key={item.key} row={item} onChange={(r) => set(i, r)} onRemove={group.items.length > 1 ? () => remove(i) : undefined} label={`${label} › condition ${i + 1}`} />
        ),
      )}
      <div className="flex flex-wrap gap-3 text-xs">
        <button type="button" className="text-indigo-700 hover:underline" onClick={() => onChange({ ...group, items: [...group.items, { key: fresh(), field: "", op: "eq" }] })}>
          + Condition
        </button>
        {depth < 2 ? (
          <button type="button" className="text-indigo-700 hover:underline" onClick={() => onChange({ ...group, items: [...group.items, { key: fresh(), mode: group.mode === "all" ? "any" : "all", items: [{ key: fresh(), field: "", op: "eq" }] }] })}>
            + Group ({group.mode === "all" ? "any" : "all"} of)
          </button>
        ) : null}
      </div>
    </fieldset>
  );
}

function ConditionRowEditor({ row, onChange, onRemove, label }: { row: ConditionRow; onChange: (r: ConditionRow) => void; onRemove?: () => void; label: string }) {
  const { groups, sample } = useSteps();
  const sampled = sampleValueAt(sample, row.field);
  return (
    <div className="flex flex-wrap items-center gap-2" data-testid="condition-row">
      <input aria-label={`${label}: field`} className="input w-full font-mono text-[13px] sm:w-56" placeholder="trigger.body.amount" value={row.field} onChange={(e) => onChange({ ...row, field: e.target.value })} />
      <IngredientPicker groups={groups} fieldLabel={`${label}: field`} onPick={(v) => onChange({ ...row, field: fieldOf(v) })} />
      <select aria-label={`${label}: operator`} className="rounded-md border-0 py-1.5 pr-7 pl-2 text-sm ring-1 ring-slate-300" value={row.op} onChange={(e) => onChange({ ...row, op: e.target.value, ...(needsValue(e.target.value) ? {} : { value: undefined }) })}>
        {OP_WORDS.map(([op, words]) => (
          <option key={op} value={op}>
            {words}
          </option>
        ))}
      </select>
      {needsValue(row.op) ? <ValueInput row={row} sampled={sampled} onChange={onChange} label={`${label}: value`} /> : null}
      {onRemove ? (
        <button type="button" className="text-xs text-slate-500 hover:text-red-700" onClick={onRemove} aria-label={`Remove ${label}`}>
          ✕
        </button>
      ) : null}
      {sampled !== undefined ? <span className="w-full text-xs text-slate-500 sm:w-auto">sample: {JSON.stringify(sampled)}</span> : null}
    </div>
  );
}

/** The value, typed by the sample's value at the field: a number input for a number, yes/no for a boolean, a list for in / not in. */
function ValueInput({ row, sampled, onChange, label }: { row: ConditionRow; sampled: unknown; onChange: (r: ConditionRow) => void; label: string }) {
  const numeric = typeof sampled === "number" && row.op !== "matches" && !["contains", "not_contains", "starts_with", "ends_with"].includes(row.op);
  if (LIST_OPS.has(row.op)) {
    const text = Array.isArray(row.value) ? row.value.join(", ") : row.value === undefined ? "" : typeof row.value === "string" ? row.value : JSON.stringify(row.value);
    const parse = (t: string) =>
      t
        .split(",")
        .map((x) => x.trim())
        .filter(Boolean)
        .map((x) => (numeric && Number.isFinite(Number(x)) ? Number(x) : x));
    return <input aria-label={label} className="input w-full sm:w-48" placeholder="a, b, c" value={text} onChange={(e) => onChange({ ...row, value: parse(e.target.value) })} />;
  }
  if (typeof sampled === "boolean" && (row.op === "eq" || row.op === "ne")) {
    return (
      <select aria-label={label} className="rounded-md border-0 py-1.5 pr-7 pl-2 text-sm ring-1 ring-slate-300" value={typeof row.value === "boolean" ? String(row.value) : ""} onChange={(e) => onChange({ ...row, value: e.target.value === "" ? undefined : e.target.value === "true" })}>
        <option value="">…</option>
        <option value="true">true</option>
        <option value="false">false</option>
      </select>
    );
  }
  if (numeric) {
    return (
      <input
        aria-label={label}
        type="number"
        step="any"
        className="input w-full sm:w-32"
        value={typeof row.value === "number" ? String(row.value) : typeof row.value === "string" ? row.value : ""}
        onChange={(e) => onChange({ ...row, value: e.target.value === "" ? undefined : Number(e.target.value) })}
      />
    );
  }
  return <input aria-label={label} className="input w-full sm:w-48" value={row.value === undefined ? "" : typeof row.value === "string" ? row.value : JSON.stringify(row.value)} onChange={(e) => onChange({ ...row, value: e.target.value })} />;
}
