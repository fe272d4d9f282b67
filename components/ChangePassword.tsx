"use client";
import { useId, useRef, useState, type FormEvent } from "react";
import { PASSWORD_MIN_LENGTH } from "@/lib/auth/policy";
import type { Problem } from "@/lib/definition";
import { api, errorBody } from "@/lib/ui/api-client";

type Field = "current_password" | "new_password" | "confirm_password";
const LABELS: Record<Field, string> = { current_password: "Current password", new_password: "New password", confirm_password: "New password again" };
const ORDER: Field[] = ["current_password", "new_password", "confirm_password"];

/**
 * Settings' password change: the current password is required; on success every other browser is
 * signed out and this one stays signed in (the API answers with a fresh cookie). Problems show
 * under their field, and the first field in error takes the focus.
 */
export function ChangePassword() {
  const id = useId();
  const [values, setValues] = useState<Record<Field, string>>({ current_password: "", new_password: "", confirm_password: "" });
  const [problems, setProblems] = useState<Problem[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [done, setDone] = useState(false);
  const [busy, setBusy] = useState(false);
  const refs = useRef<Partial<Record<Field, HTMLInputElement | null>>>({});

  const focusFirst = (ps: Problem[]) => {
    const first = ORDER.find((f) => ps.some((p) => p.path === f));
    if (first) requestAnimationFrame(() => refs.current[first]?.focus());
  };

  async function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    setError(null);
    setDone(false);
    if (values.new_password !== values.confirm_password) {
      const ps = [{ path: "confirm_password", message: "the two new passwords differ" }];
      setProblems(ps);
      focusFirst(ps);
      return;
    }
    setBusy(true);
    setProblems([]);
    try {
      const res = await api.api.account.password.$post({ json: { current_password: values.current_password, new_password: values.new_password } });
      if (res.ok) {
        setDone(true);
        setValues({ current_password: "", new_password: "", confirm_password: "" });
        return;
      }
      const body = await errorBody(res);
      const ps = (body.problems ?? []).filter((p) => ORDER.includes(p.path as Field));
      setProblems(ps);
      focusFirst(ps);
      if (!ps.length) setError(body.error ?? `request failed (${res.status})`);
    } catch {
      setError("could not reach the server; try again");
    } finally {
      setBusy(false);
    }
  }

  const problemFor = (f: Field) => problems.filter((p) => p.path === f).map((p) => p.message).join("; ");

  return (
    <form method="post" noValidate onSubmit={(e) => void submit(e)} className="flex max-w-md flex-col gap-3" data-testid="change-password" aria-label="Change password">
      {/* A hidden username lets password managers file the new password under the right account. */}
      <input type="text" name="username" autoComplete="username" hidden readOnly value="" />
      {ORDER.map((f) => {
        const problem = problemFor(f);
        const inputId = `${id}-${f}`;
        return (
          <div key={f}>
            <label htmlFor={inputId} className="field-label">
              {LABELS[f]}
            </label>
            <input
              id={inputId}
              ref={(el) => {
                refs.current[f] = el;
              }}
              name={f}
              type="password"
              className="input mt-1"
              autoComplete={f === "current_password" ? "current-password" : "new-password"}
              value={values[f]}
              onChange={(e) => setValues((v) => ({ ...v, [f]: e.target.value }))}
              aria-invalid={problem ? true : undefined}
              aria-describedby={problem ? `${inputId}-problem` : f === "new_password" ? `${inputId}-hint` : undefined}
            />
            {problem ? (
              <p id={`${inputId}-problem`} className="mt-1 text-sm text-red-700">
                {problem}
              </p>
            ) : f === "new_password" ? (
              <p id={`${inputId}-hint`} className="help">
                At least {PASSWORD_MIN_LENGTH} characters.
              </p>
            ) : null}
          </div>
        );
      })}
      {error ? (
        <p role="alert" className="rounded-md bg-red-50 px-3 py-2 text-sm text-red-700">
          {error}
        </p>
      ) : null}
      {done ? (
        <p role="status" className="rounded-md bg-green-50 px-3 py-2 text-sm text-green-800" data-testid="password-changed">
          Password changed. Every other browser and device is signed out; this one stays signed in.
        </p>
      ) : null}
      <div>
        <button type="submit" className="btn-primary" disabled={busy}>
          {busy ? "Changing…" : "Change password"}
        </button>
      </div>
      <p className="help">
        Forgot it? On the server, run <span className="code">pnpm reset-password</span> (see the README).
      </p>
    </form>
  );
}
