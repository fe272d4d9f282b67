"use client";
import type { MetaAction, MetaChannel } from "@/lib/api/queries";

export type ChannelValues = Record<string, string>;

/** A stored config as the form's text values (a JSON field as its JSON text). */
export function valuesOf(config: Record<string, unknown> | undefined): ChannelValues {
  const out: ChannelValues = {};
  for (const [k, v] of Object.entries(config ?? {})) out[k] = typeof v === "string" ? v : JSON.stringify(v);
  return out;
}

/** The form's values as a config: empty fields left out, JSON fields parsed (a field that is not JSON is sent as text, for the server to name). */
export function configOf(action: MetaChannel | undefined, values: ChannelValues): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of fieldsOf(action)) {
    const v = values[f.name];
    if (v === undefined || v.trim() === "") continue;
    if (f.kind === "json") {
      try {
        out[f.name] = JSON.parse(v);
      } catch {
        out[f.name] = v;
      }
    } else out[f.name] = v;
  }
  return out;
}

/** The plug-in's fields that say where an alert goes: its message fields are whenthen's. */
export function fieldsOf(action: MetaChannel | undefined) {
  if (!action) return [];
  return action.fields.filter((f) => !action.channel.message_fields.includes(f.name));
}

/**
 * The config fields of one channel plug-in, generated from its schema's field metadata (the
 * editor's forms come from the same), each with the problem the server named for it.
 */
export function AlertChannelFields({
  action,
  values,
  onChange,
  problems,
  idPrefix,
}: {
  action: MetaChannel | undefined;
  values: ChannelValues;
  onChange: (values: ChannelValues) => void;
  problems: Record<string, string>;
  idPrefix: string;
}) {
  const fields = fieldsOf(action).filter((f) => !f.showWhen || f.showWhen.equals.includes(values[f.showWhen.field] ?? defaultOf(action, f.showWhen.field)));
  return (
    <div className="grid grid-cols-1 gap-3 md:grid-cols-2">
      {fields.map((f) => {
        const id = `${idPrefix}-${f.name}`;
        const problem = problems[`channel.config.${f.name}`];
        const set = (v: string) => onChange({ ...values, [f.name]: v });
        return (
          <div key={f.name} className={f.kind === "json" || f.kind === "textarea" ? "md:col-span-2" : undefined}>
            <label htmlFor={id} className="field-label mb-1">
              {f.label}
              {f.required ? <span className="text-red-700"> *</span> : null}
            </label>
            {f.kind === "select" && f.options ? (
              <select id={id} className="input" value={values[f.name] ?? defaultOf(action, f.name)} onChange={(e) => set(e.target.value)}>
                {f.options.map((o) => (
                  <option key={o.value} value={o.value}>
                    {o.label}
                  </option>
                ))}
              </select>
            ) : f.kind === "json" || f.kind === "textarea" ? (
              <textarea id={id} className="input font-mono text-xs" rows={3} value={values[f.name] ?? ""} onChange={(e) => set(e.target.value)} placeholder={f.placeholder} />
            ) : (
              <input id={id} className="input" value={values[f.name] ?? ""} onChange={(e) => set(e.target.value)} placeholder={f.placeholder} autoComplete="off" />
            )}
            {problem ? (
              <p className="mt-1 text-xs text-red-700" role="alert" data-testid={`problem-${f.name}`}>
                {problem}
              </p>
            ) : f.help ? (
              <p className="help">{f.help}</p>
            ) : null}
          </div>
        );
      })}
    </div>
  );
}

/**
 * What a select shows while the field is left out: the value the plug-in's schema fills in (the
 * http channel's method is POST), so the form shows what is sent; else the first option.
 */
export function defaultOf(action: MetaAction | undefined, name: string): string {
  const f = action?.fields.find((x) => x.name === name);
  return f?.default ?? f?.options?.[0]?.value ?? "";
}
