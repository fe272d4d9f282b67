"use client";
import type { IngredientGroup } from "@/lib/ui/format";
import type { FieldMeta } from "@/lib/plugin";
import { CronField } from "./CronField";
import { TemplateInput } from "./TemplateInput";
import { TimezoneSelect } from "./TimezoneSelect";
import { jsonModeProblem, modeKey, modeOf, visible, type FormConfig, type FormValue } from "./fields";

/**
 * A plug-in's config form, generated from its `fields` metadata: a new trigger or action shows up
 * here without UI changes. Widgets follow the field's kind (`cron` gets presets and its next fire
 * times, `timezone` the zone picker), never its name.
 */
export function ConfigForm(props: {
  idPrefix: string;
  fields: FieldMeta[];
  cfg: FormConfig;
  onChange: (cfg: FormConfig) => void;
  errors: Map<string, string[]>;
  /** Said at the field but not refused on save (a secret that does not exist). */
  warnings?: Map<string, string[]>;
  groups: IngredientGroup[] | null;
}) {
  const set = (name: string, v: FormValue) => props.onChange({ ...props.cfg, [name]: v });
  const shown = props.fields.filter((f) => visible(f, props.cfg));
  // A cron field's fire times are shown in the zone its form picks.
  const zoneField = props.fields.find((f) => f.kind === "timezone");
  const zone = zoneField ? props.cfg[zoneField.name] : undefined;
  if (!shown.length) return <p className="text-sm text-slate-600">Nothing to configure.</p>;
  return (
    <div className="flex flex-col gap-4">
      {shown.map((f) => {
        const id = `${props.idPrefix}-${f.name}`;
        const errs = props.errors.get(f.name) ?? [];
        // A select's chosen option may say more about itself than the field does (a webhook's signature preset).
        const help = (f.kind === "select" ? f.options?.find((o) => o.value === props.cfg[f.name])?.help : undefined) ?? f.help;
        const helpId = help ? `${id}-help` : undefined;
        return (
          <div key={f.name} data-field={f.name}>
            {f.kind === "boolean" ? (
              <label className="flex items-center gap-2 text-sm font-medium text-slate-800">
                <input id={id} type="checkbox" checked={props.cfg[f.name] === true} onChange={(e) => set(f.name, e.target.checked)} className="h-4 w-4 rounded border-slate-300 text-indigo-600" />
                {f.label}
              </label>
            ) : null}
            {f.jsonMode ? <BodyModeSwitch id={id} label={f.label} mode={modeOf(props.cfg, f.name)} onChange={(m) => set(modeKey(f.name), m)} /> : null}
            {f.kind === "boolean" ? null : (
              <FieldControl
                field={f}
                id={id}
                value={props.cfg[f.name]}
                onChange={(v) => set(f.name, v)}
                zone={typeof zone === "string" ? zone : "UTC"}
                invalid={errs.length > 0}
                groups={f.template ? props.groups : null}
                helpId={helpId}
                label={
                  <label htmlFor={f.kind === "list" ? undefined : id} className="field-label">
                    {f.label}
                    {f.required ? <span className="ml-0.5 text-red-600" aria-hidden="true">*</span> : null}
                  </label>
                }
              />
            )}
            {help ? (
              <p id={helpId} className="help" data-testid={`${id}-help`}>
                {help}
              </p>
            ) : null}
            {usesPlaceholder(f) && props.cfg[f.name] === "" && f.placeholder ? (
              // A placeholder is an example, not a value: one click makes it the value.
              <button type="button" className="mt-1 text-xs font-medium text-indigo-700 hover:underline" onClick={() => set(f.name, f.placeholder!)} aria-label={`Use the example for ${f.label}: ${f.placeholder}`}>
                Use <span className="font-mono">{f.placeholder}</span>
              </button>
            ) : null}
            {f.jsonMode && modeOf(props.cfg, f.name) === "json" && typeof props.cfg[f.name] === "string" && jsonModeProblem(props.cfg[f.name] as string) ? (
              <p className="mt-1 text-xs font-medium text-red-700" role="alert" data-testid="json-body-problem">
                {jsonModeProblem(props.cfg[f.name] as string)}
              </p>
            ) : null}
            {errs.map((e) => (
              <p key={e} className="mt-1 text-xs font-medium text-red-700" role="alert">
                {e}
              </p>
            ))}
            {(props.warnings?.get(f.name) ?? []).map((w) => (
              <p key={w} className="mt-1 text-xs font-medium text-amber-800" data-testid="field-warning">
                {w}
              </p>
            ))}
          </div>
        );
      })}
    </div>
  );
}

/** JSON (typed) or Text, for a field that may be either (the http body). */
function BodyModeSwitch({ id, label, mode, onChange }: { id: string; label: string; mode: "json" | "text"; onChange: (m: "json" | "text") => void }) {
  const option = (m: "json" | "text", text: string) => (
    <label className={`cursor-pointer rounded px-2 py-0.5 ${mode === m ? "bg-indigo-600 text-white" : "text-slate-700 hover:bg-slate-100"}`}>
      <input type="radio" className="sr-only" name={`${id}-mode`} value={m} checked={mode === m} onChange={() => onChange(m)} />
      {text}
    </label>
  );
  return (
    <div role="radiogroup" aria-label={`${label}: format`} className="mb-1 inline-flex gap-1 rounded-md p-0.5 text-xs font-medium ring-1 ring-slate-300" data-testid={`${id}-mode`}>
      {option("json", "JSON (typed)")}
      {option("text", "Text")}
    </div>
  );
}

function FieldControl({ field: f, id, value, onChange, zone, invalid, groups, helpId, label }: {
  label: React.ReactNode;
  field: FieldMeta;
  id: string;
  value: FormValue | undefined;
  onChange: (v: FormValue) => void;
  /** The form's time zone, for a cron field's fire times. */
  zone: string;
  invalid: boolean;
  groups: IngredientGroup[] | null;
  helpId?: string;
}) {
  const s = typeof value === "string" ? value : "";
  const labelled = (control: React.ReactNode) => (
    <>
      <div className="mb-1">{label}</div>
      {control}
    </>
  );
  if (f.kind === "cron") {
    return labelled(<CronField id={id} value={s} onChange={onChange} timezone={zone} invalid={invalid} />);
  }
  if (f.kind === "timezone") {
    return labelled(<TimezoneSelect id={id} value={s} onChange={onChange} allowEmpty={!f.required} />);
  }
  switch (f.kind) {
    case "select":
      return labelled(
        <select id={id} value={s} onChange={(e) => onChange(e.target.value)} aria-describedby={helpId} className={`input ${invalid ? "ring-red-500" : ""}`}>
          {f.required ? null : <option value="">{f.default ? `(default: ${f.default})` : "(default)"}</option>}
          {(f.options ?? []).map((o) => (
            <option key={o.value} value={o.value}>
              {o.label}
            </option>
          ))}
        </select>,
      );
    case "number":
      return labelled(<input id={id} type="number" value={s} placeholder={f.placeholder} onChange={(e) => onChange(e.target.value)} aria-describedby={helpId} className={`input w-40 ${invalid ? "ring-red-500" : ""}`} />);
    case "list":
      return labelled(<ListField field={f} id={id} items={Array.isArray(value) ? value : [""]} onChange={onChange} groups={groups} invalid={invalid} />);
    case "json":
    case "textarea":
      return <TemplateInput header={label} id={id} label={f.label} value={s} onChange={onChange} multiline mono={f.kind === "json"} rows={f.kind === "json" ? 5 : 4} placeholder={example(f)} invalid={invalid} groups={groups} describedBy={helpId} />;
    case "secret":
    case "text":
    default:
      return <TemplateInput header={label} id={id} label={f.label} value={s} onChange={onChange} mono={f.kind === "secret"} placeholder={example(f)} invalid={invalid} groups={groups} describedBy={helpId} />;
  }
}

/**
 * A `list` field: one template per row; "Add …" appends one. The field's `item` names a row and
 * numbers it: `{ noun: "column", numbering: "letters" }` gives "Column A" and "Add column".
 */
function ListField({ field, id, items, onChange, groups, invalid }: { field: FieldMeta; id: string; items: string[]; onChange: (v: string[]) => void; groups: IngredientGroup[] | null; invalid: boolean }) {
  const noun = field.item?.noun ?? "item";
  const rowLabel = (i: number) => (field.item?.numbering === "letters" ? `${noun.charAt(0).toUpperCase()}${noun.slice(1)} ${columnName(i)}` : `#${i + 1}`);
  return (
    <div className="flex flex-col gap-2" role="group" aria-label={field.label}>
      {items.map((item, i) => (
        <div key={i} className="flex items-start gap-2">
          <span className="mt-1.5 w-16 shrink-0 text-xs text-slate-500">
            {rowLabel(i)}
          </span>
          <div className="min-w-0 flex-1">
            <TemplateInput
              id={`${id}-${i}`}
              label={`${field.label} ${i + 1}`}
              value={item}
              onChange={(v) => onChange(items.map((x, j) => (j === i ? v : x)))}
              invalid={invalid}
              groups={groups}
            />
          </div>
          <button type="button" className="btn-secondary mt-0.5 px-2" aria-label={`Remove ${noun} ${i + 1}`} onClick={() => onChange(items.filter((_, j) => j !== i))} disabled={items.length <= 1}>
            ×
          </button>
        </div>
      ))}
      <div>
        <button type="button" className="btn-secondary" onClick={() => onChange([...items, ""])}>
          Add {noun}
        </button>
      </div>
    </div>
  );
}

/** 0 → A, 25 → Z, 26 → AA: the letters a spreadsheet numbers its columns with. */
function columnName(i: number): string {
  let n = i + 1;
  let s = "";
  while (n > 0) {
    const r = (n - 1) % 26;
    s = String.fromCharCode(65 + r) + s;
    n = Math.floor((n - 1) / 26);
  }
  return s;
}

/** Text-like fields whose placeholder is an example the user may adopt as it is. */
const usesPlaceholder = (f: FieldMeta): boolean => f.kind === "text" || f.kind === "secret" || f.kind === "textarea" || f.kind === "json";

/** "e.g. {{secrets.SLACK_WEBHOOK}}": greyed italic text that no one reads as a filled-in value. */
const example = (f: FieldMeta): string | undefined => (f.placeholder ? `e.g. ${f.placeholder}` : undefined);
