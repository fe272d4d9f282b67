"use client";
import type { IngredientGroup } from "@/lib/ui/format";
import { TemplateInput } from "./TemplateInput";
import { TimezoneSelect } from "./TimezoneSelect";
import { CONDITION_OP_WORDS, conditionPath, hasTimedSettings, TIMED_LABELS, type ConditionDraft, type TimedDraft } from "./timing";

type TextKey = { [K in keyof TimedDraft]: TimedDraft[K] extends string ? K : never }[keyof TimedDraft];

/**
 * The applet's settings for its timed actions: the record a trigger is about (subject id and
 * version, templates over the ingredients), which events replace or cancel its plans, the contact
 * whose clock quiet hours follow, quiet hours and a frequency cap. Each field's save problems show
 * under it; problems about a part as a whole under the part's heading.
 */
export function TimedSettings({ timed, onChange, errors, groups, anyTimed, warnings = [] }: {
  timed: TimedDraft;
  onChange: (timed: TimedDraft) => void;
  /** By `part.field` under `timed` (`quiet_hours.start`), or the part alone. */
  errors: Map<string, string[]>;
  groups: IngredientGroup[];
  /** Whether an action has a timing: the section is open then, and says what it is for. */
  anyTimed: boolean;
  /** What planning against the sample said about these settings (a subject id that rendered empty). */
  warnings?: string[];
}) {
  const set = (patch: Partial<TimedDraft>) => onChange({ ...timed, ...patch });
  const errs = (key: string) => errors.get(key) ?? [];
  const partErrors = [...errors.entries()].filter(([k]) => !k.startsWith("conditions") && (!k.includes(".") || !(k in TIMED_LABELS))).flatMap(([k, ms]) => ms.map((m) => `${TIMED_LABELS[k] ?? k}: ${m}`));

  const text = (key: TextKey, path: string, opts: { placeholder?: string; template?: boolean; mono?: boolean; help?: string; width?: string } = {}) => {
    const id = `timed-${path.replace(".", "-")}`;
    const invalid = errs(path).length > 0;
    const label = (
      <label htmlFor={id} className="field-label">
        {TIMED_LABELS[path]}
      </label>
    );
    return (
      <div data-field={`timed.${path}`} className="min-w-0">
        {opts.template ? (
          <TemplateInput header={label} id={id} label={TIMED_LABELS[path] ?? path} value={timed[key]} onChange={(v) => set({ [key]: v })} mono placeholder={opts.placeholder} invalid={invalid} groups={groups} />
        ) : (
          <>
            <div className="mb-1">{label}</div>
            <input id={id} type="text" autoComplete="off" spellCheck={false} value={timed[key]} placeholder={opts.placeholder} onChange={(e) => set({ [key]: e.target.value })} aria-invalid={invalid || undefined} className={`input ${opts.mono ? "font-mono" : ""} ${opts.width ?? ""} ${invalid ? "ring-red-500" : ""}`} />
          </>
        )}
        {opts.help ? <p className="help">{opts.help}</p> : null}
        <FieldErrors messages={errs(path)} />
      </div>
    );
  };

  return (
    <section className="card" aria-labelledby="timed-heading" data-testid="timed-settings">
      <details open={anyTimed || hasTimedSettings(timed) || errors.size > 0}>
        <summary className="cursor-pointer">
          <h2 id="timed-heading" className="inline text-base font-semibold">
            Timed actions: record, conditions, quiet hours, cap
          </h2>
          <span className="mt-0.5 block text-xs text-slate-500 sm:mt-0 sm:ml-2 sm:inline">{anyTimed ? "for the actions that run at an offset" : "used once an action runs at an offset"}</span>
        </summary>
        <div className="mt-4 flex flex-col gap-5">
          {warnings.length ? (
            <ul className="rounded-md bg-amber-50 p-3 text-xs text-amber-900 ring-1 ring-amber-200" data-testid="timed-warnings">
              {warnings.map((w) => (
                <li key={w} className="wrap-anywhere">
                  For the sample: {w.replace(/^timed: /, "")}
                </li>
              ))}
            </ul>
          ) : null}
          {partErrors.map((m) => (
            <p key={m} className="text-xs font-medium text-red-700" role="alert">
              {m}
            </p>
          ))}
          <Group title="The record an event is about" help="A later event about the same record with a higher version replaces what was planned for it; an older version is refused.">
            <div className="grid gap-3 md:grid-cols-2">
              {text("subjectId", "subject.id", { template: true, placeholder: "e.g. {{trigger.body.booking.id}}" })}
              {text("subjectVersion", "subject.version", { template: true, placeholder: "e.g. {{trigger.body.booking.version}}", help: "A number, or a time (ISO 8601 or epoch) such as updated_at." })}
              {text("subjectType", "subject.type", { placeholder: "record", width: "md:w-48" })}
            </div>
          </Group>
          <Group title="Events that replace or cancel the plan" help="Compared with the value at the path. A replacing event cancels the older version's pending runs (superseded) and plans its own; a cancelling one plans nothing.">
            <div className="grid gap-3 md:grid-cols-3">
              {text("supersedePath", "supersede.path", { mono: true, placeholder: "e.g. trigger.body.event" })}
              {text("supersedeValues", "supersede.values", { mono: true, placeholder: "booking.rescheduled", help: "Comma separated." })}
              {text("cancelValues", "supersede.cancel_values", { mono: true, placeholder: "booking.cancelled", help: "Comma separated; also listed to the left." })}
            </div>
          </Group>
          <Group title="Contact" help="Whose clock quiet hours follow, and whom the frequency cap counts.">
            <div className="grid gap-3 md:grid-cols-2">
              {text("contactId", "contact.id", { template: true, placeholder: "e.g. {{trigger.body.contact.email}}" })}
              {text("contactTimezone", "contact.timezone", { template: true, placeholder: "e.g. {{trigger.body.contact.tz}}", help: "A zone from the payload; without one, the quiet hours' zone, else the applet's." })}
            </div>
          </Group>
          <Group title="Quiet hours" help="A run due inside them waits for their end (defer) or is skipped.">
            <div className="grid grid-cols-2 gap-3 md:grid-cols-4">
              <Clock id="timed-quiet_hours-start" label={TIMED_LABELS["quiet_hours.start"]!} value={timed.quietStart} placeholder="21:00" onChange={(v) => set({ quietStart: v })} errors={errs("quiet_hours.start")} path="quiet_hours.start" />
              <Clock id="timed-quiet_hours-end" label={TIMED_LABELS["quiet_hours.end"]!} value={timed.quietEnd} placeholder="08:00" onChange={(v) => set({ quietEnd: v })} errors={errs("quiet_hours.end")} path="quiet_hours.end" />
              <div data-field="timed.quiet_hours.mode">
                <label htmlFor="timed-quiet_hours-mode" className="field-label mb-1">
                  {TIMED_LABELS["quiet_hours.mode"]}
                </label>
                <select id="timed-quiet_hours-mode" value={timed.quietMode} onChange={(e) => set({ quietMode: e.target.value as TimedDraft["quietMode"] })} className="input">
                  <option value="">Defer (default)</option>
                  <option value="defer">Defer to their end</option>
                  <option value="skip">Skip the run</option>
                </select>
                <FieldErrors messages={errs("quiet_hours.mode")} />
              </div>
              <div data-field="timed.quiet_hours.timezone" className="col-span-2 min-w-0 md:col-span-1">
                <label htmlFor="timed-quiet_hours-timezone" className="field-label mb-1">
                  {TIMED_LABELS["quiet_hours.timezone"]}
                </label>
                <TimezoneSelect id="timed-quiet_hours-timezone" value={timed.quietTimezone} onChange={(v) => set({ quietTimezone: v })} allowEmpty emptyLabel="The contact's, else the applet's" />
                <FieldErrors messages={errs("quiet_hours.timezone")} />
              </div>
            </div>
          </Group>
          <Conditions rows={timed.conditions} onChange={(conditions) => set({ conditions })} errors={errors} />
          <FrequencyCap timed={timed} set={set} errs={errs} />
        </div>
      </details>
    </section>
  );
}

function Group({ title, help, children }: { title: string; help: string; children: React.ReactNode }) {
  return (
    <div className="border-t border-slate-200 pt-4 first:border-t-0 first:pt-0">
      <h3 className="text-sm font-semibold text-slate-800">{title}</h3>
      <p className="help mt-0 mb-2">{help}</p>
      {children}
    </div>
  );
}

function FrequencyCap({ timed, set, errs }: { timed: TimedDraft; set: (patch: Partial<TimedDraft>) => void; errs: (key: string) => string[] }) {
  return (
    <Group title="Frequency cap" help="Per contact, checked when the run is due: over the cap it is skipped.">
      <div className="flex flex-wrap items-start gap-3">
        <div data-field="timed.frequency_cap.max">
          <label htmlFor="timed-frequency_cap-max" className="field-label mb-1">
            {TIMED_LABELS["frequency_cap.max"]}
          </label>
          <input id="timed-frequency_cap-max" type="number" min={1} value={timed.capMax} placeholder="1" onChange={(e) => set({ capMax: e.target.value })} aria-invalid={errs("frequency_cap.max").length > 0 || undefined} className={`input w-24 ${errs("frequency_cap.max").length ? "ring-red-500" : ""}`} />
          <FieldErrors messages={errs("frequency_cap.max")} />
        </div>
        <div data-field="timed.frequency_cap.per">
          <label htmlFor="timed-frequency_cap-per" className="field-label mb-1">
            {TIMED_LABELS["frequency_cap.per"]}
          </label>
          <input id="timed-frequency_cap-per" type="text" autoComplete="off" spellCheck={false} value={timed.capPer} placeholder="1d" onChange={(e) => set({ capPer: e.target.value })} aria-invalid={errs("frequency_cap.per").length > 0 || undefined} className={`input w-28 font-mono ${errs("frequency_cap.per").length ? "ring-red-500" : ""}`} />
          <FieldErrors messages={errs("frequency_cap.per")} />
        </div>
      </div>
    </Group>
  );
}

/** An HH:MM clock time, typed (a time input would turn 24:00 and a half-typed value into nothing). */
function Clock({ id, label, value, placeholder, onChange, errors, path }: { id: string; label: string; value: string; placeholder: string; onChange: (v: string) => void; errors: string[]; path: string }) {
  return (
    <div data-field={`timed.${path}`}>
      <label htmlFor={id} className="field-label mb-1">
        {label}
      </label>
      <input id={id} type="text" inputMode="numeric" autoComplete="off" value={value} placeholder={placeholder} onChange={(e) => onChange(e.target.value)} aria-invalid={errors.length > 0 || undefined} className={`input font-mono ${errors.length ? "ring-red-500" : ""}`} />
      <FieldErrors messages={errors} />
    </div>
  );
}

function FieldErrors({ messages }: { messages: string[] }) {
  return (
    <>
      {messages.map((m) => (
        <p key={m} className="mt-1 text-xs font-medium text-red-700" role="alert">
          {m}
        </p>
      ))}
    </>
  );
}

const NEW_CONDITION: ConditionDraft = { group: "all", field: "", op: "eq", value: "" };

/**
 * Whether an event plans its timed actions at all ( the library's conditions): rows that must
 * all hold, and rows of which one must. Each row's problems show under it, by its path in the
 * definition (`conditions.all.0.op`).
 */
function Conditions({ rows, onChange, errors }: { rows: ConditionDraft[]; onChange: (rows: ConditionDraft[]) => void; errors: Map<string, string[]> }) {
  const update = (i: number, patch: Partial<ConditionDraft>) => onChange(rows.map((r, j) => (j === i ? { ...r, ...patch } : r)));
  const rowKeys = new Set(rows.map((_, i) => conditionPath(rows, i)));
  const listErrors = [...errors.entries()].filter(([k]) => k.startsWith("conditions") && ![...rowKeys].some((r) => k === r || k.startsWith(`${r}.`))).flatMap(([, ms]) => ms);
  return (
    <Group title="Conditions" help="Checked when the event arrives: an event they reject plans nothing. Paths start with trigger. (the ingredients), contact. or event. (event.type, event.subject.id); a value is read as JSON when it is JSON (42, true, [&quot;a&quot;,&quot;b&quot;]), else as text.">
      <ul className="flex flex-col gap-3" data-testid="timed-conditions">
        {rows.map((row, i) => {
          const path = conditionPath(rows, i);
          const at = (f: string) => errors.get(`${path}.${f}`) ?? [];
          const id = `timed-condition-${i}`;
          return (
            <li key={i} data-field={`timed.${path}`} className="grid grid-cols-2 gap-2 rounded-md p-2 ring-1 ring-slate-200 md:grid-cols-[9rem_minmax(0,1fr)_9rem_minmax(0,1fr)_auto] md:items-start">
              <div>
                <label htmlFor={`${id}-group`} className="field-label mb-1">
                  Kind
                </label>
                <select id={`${id}-group`} value={row.group} onChange={(e) => update(i, { group: e.target.value as ConditionDraft["group"] })} className="input">
                  <option value="all">Must hold</option>
                  <option value="any">One of these</option>
                </select>
              </div>
              <div className="col-span-2 min-w-0 md:col-span-1" data-field={`timed.${path}.field`}>
                <label htmlFor={`${id}-field`} className="field-label mb-1">
                  Field
                </label>
                <input id={`${id}-field`} type="text" autoComplete="off" spellCheck={false} value={row.field} placeholder="trigger.body.status" onChange={(e) => update(i, { field: e.target.value })} aria-invalid={at("field").length > 0 || undefined} className={`input font-mono ${at("field").length ? "ring-red-500" : ""}`} />
                <FieldErrors messages={at("field")} />
              </div>
              <div data-field={`timed.${path}.op`}>
                <label htmlFor={`${id}-op`} className="field-label mb-1">
                  Test
                </label>
                <select id={`${id}-op`} value={row.op} onChange={(e) => update(i, { op: e.target.value })} className="input">
                  {Object.entries(CONDITION_OP_WORDS).map(([op, words]) => (
                    <option key={op} value={op}>
                      {words}
                    </option>
                  ))}
                </select>
                <FieldErrors messages={at("op")} />
              </div>
              <div className="col-span-2 min-w-0 md:col-span-1" data-field={`timed.${path}.value`}>
                <label htmlFor={`${id}-value`} className="field-label mb-1">
                  Value
                </label>
                <input id={`${id}-value`} type="text" autoComplete="off" spellCheck={false} value={row.value} placeholder={row.op === "exists" ? "true (the default) or false" : row.op === "in" || row.op === "not_in" ? '["a", "b"]' : "confirmed"} onChange={(e) => update(i, { value: e.target.value })} aria-invalid={at("value").length > 0 || undefined} className={`input font-mono ${at("value").length ? "ring-red-500" : ""}`} />
                <FieldErrors messages={[...at("value"), ...(errors.get(path) ?? [])]} />
              </div>
              <div className="col-span-2 md:col-span-1 md:pt-6">
                <button type="button" className="btn-secondary" onClick={() => onChange(rows.filter((_, j) => j !== i))} aria-label={`Remove condition ${i + 1}`}>
                  Remove
                </button>
              </div>
            </li>
          );
        })}
      </ul>
      <FieldErrors messages={listErrors} />
      <button type="button" className="btn-secondary mt-3" onClick={() => onChange([...rows, NEW_CONDITION])} data-testid="add-condition">
        Add a condition
      </button>
    </Group>
  );
}
