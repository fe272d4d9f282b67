"use client";
import type { Dispatch } from "react";
import type { Draft, DraftAction } from "./draft";
import type { WordedProblem } from "./problems";
import { Alerts } from "./PluginCards";
import { TimezoneSelect } from "./TimezoneSelect";

export type SaveStatus = "saved" | "unsaved" | null;

/** Name, retries and time zone, the problems of the last save, and the save button. */
export function SaveSection({ draft, name, dispatch, nameErrors, problems, saveError, saving, status, isNew, onSave }: {
  draft: Draft;
  /** The name as shown: the typed one, or the one made from the trigger and actions. */
  name: string;
  dispatch: Dispatch<DraftAction>;
  nameErrors: string[];
  problems: WordedProblem[];
  saveError: string | null;
  saving: boolean;
  status: SaveStatus;
  isNew: boolean;
  onSave: () => void;
}) {
  return (
    <section className="card" aria-labelledby="save-heading">
      <h2 id="save-heading" className="sr-only">
        Name and save
      </h2>
      <div className="grid gap-4 md:grid-cols-[1fr_auto]">
        <div>
          <label htmlFor="applet-name" className="field-label mb-1">
            Name
          </label>
          <input
            id="applet-name"
            type="text"
            value={name}
            onChange={(e) => dispatch({ kind: "setName", value: e.target.value })}
            aria-invalid={nameErrors.length > 0 || undefined}
            className={`input ${nameErrors.length ? "ring-red-500" : ""}`}
          />
          <Alerts messages={nameErrors} className="mt-1 text-xs font-medium text-red-700" />
        </div>
        <details className="text-sm md:w-72">
          <summary className="cursor-pointer text-slate-600">Advanced: retries and time zone</summary>
          <div className="mt-2 flex flex-col gap-3">
            <div>
              <label htmlFor="max-attempts" className="field-label mb-1">
                Attempts before giving up
              </label>
              <input id="max-attempts" type="number" min={1} max={10} placeholder="5" value={draft.maxAttempts} onChange={(e) => dispatch({ kind: "setMaxAttempts", value: e.target.value })} className="input w-24" />
            </div>
            <div>
              <label htmlFor="def-timezone" className="field-label mb-1">
                Time zone for dates in templates
              </label>
              <TimezoneSelect id="def-timezone" value={draft.timezone} onChange={(value) => dispatch({ kind: "setTimezone", value })} allowEmpty emptyLabel="Default (the schedule's zone, else UTC)" />
            </div>
          </div>
        </details>
      </div>
      {problems.length ? (
        <div className="mt-4 rounded-md bg-red-50 p-3 text-sm text-red-900 ring-1 ring-red-200" data-testid="save-problems">
          <p className="font-medium">
            Not saved: {problems.length} problem{problems.length === 1 ? "" : "s"}. Fix the fields marked in red.
          </p>
          <ul className="mt-1 list-disc pl-5 text-xs">
            {problems.map((p, i) => (
              <li key={i}>
                <span className="font-medium">{p.where}</span>: {p.message}
              </li>
            ))}
          </ul>
        </div>
      ) : saveError ? (
        <p className="mt-4 rounded-md bg-red-50 p-2 text-sm text-red-800 ring-1 ring-red-200">{saveError}</p>
      ) : null}
      <div className="mt-4 flex items-center gap-3">
        <button type="button" className="btn-primary" onClick={onSave} disabled={saving}>
          {saving ? "Saving…" : isNew ? "Save applet" : "Save changes"}
        </button>
        {status === "saved" ? (
          <span className="text-sm text-green-700" role="status">
            Saved.
          </span>
        ) : status === "unsaved" ? (
          <span className="text-sm text-amber-800" data-testid="unsaved">
            Unsaved changes
          </span>
        ) : null}
      </div>
    </section>
  );
}
