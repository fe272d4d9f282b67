"use client";
import { useRef } from "react";
import type { IngredientGroup } from "@/lib/ui/format";
import { insertAt } from "@/lib/ui/format";
import { IngredientPicker } from "./IngredientPicker";

/**
 * A text input or textarea with an "Insert ingredient" dropdown that inserts at the caret (or
 * replaces the selection). The input keeps selectionStart/End after it loses focus to the select.
 */
export function TemplateInput(props: {
  id: string;
  label: string;
  value: string;
  onChange(v: string): void;
  multiline?: boolean;
  mono?: boolean;
  rows?: number;
  placeholder?: string;
  invalid?: boolean;
  groups: IngredientGroup[] | null;
  describedBy?: string;
  /** The field's label: the picker sits on its row. Without one the picker sits beside the input. */
  header?: React.ReactNode;
}) {
  const ref = useRef<HTMLInputElement & HTMLTextAreaElement>(null);

  function pick(text: string) {
    const el = ref.current;
    const start = el?.selectionStart ?? props.value.length;
    const end = el?.selectionEnd ?? start;
    const next = insertAt(props.value, start, end, text);
    props.onChange(next.value);
    // Put the caret after the inserted text once React has written the new value.
    requestAnimationFrame(() => {
      el?.focus();
      el?.setSelectionRange(next.caret, next.caret);
    });
  }

  const common = {
    id: props.id,
    value: props.value,
    placeholder: props.placeholder,
    "aria-invalid": props.invalid || undefined,
    "aria-describedby": props.describedBy,
    className: `input ${props.mono ? "font-mono text-[13px]" : ""} ${props.invalid ? "ring-red-500" : ""}`,
  };
  const input = props.multiline ? (
    <textarea ref={ref} rows={props.rows ?? 4} {...common} onChange={(e) => props.onChange(e.target.value)} />
  ) : (
    <input ref={ref} type="text" autoComplete="off" spellCheck={false} {...common} onChange={(e) => props.onChange(e.target.value)} />
  );
  const picker = props.groups ? <IngredientPicker groups={props.groups} onPick={pick} fieldLabel={props.label} /> : null;
  if (props.header !== undefined) {
    return (
      <div>
        <div className="mb-1 flex flex-wrap items-end justify-between gap-x-3 gap-y-1">
          {props.header}
          {picker}
        </div>
        {input}
      </div>
    );
  }
  return (
    <div className="flex items-start gap-2">
      <div className="min-w-0 flex-1">{input}</div>
      {picker ? <div className="shrink-0 pt-1">{picker}</div> : null}
    </div>
  );
}
