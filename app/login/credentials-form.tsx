"use client";

import { useState, useSyncExternalStore, type FormEvent } from "react";
import { safeNext } from "@/lib/auth/safe-next";
import type { Problem } from "@/lib/definition";
import { api, errorBody } from "@/lib/ui/api-client";

export interface CredentialsFormProps {
  endpoint: "/api/setup" | "/api/login";
  submitLabel: string;
  /** Where to go once signed in; anything that is not a path on this site becomes "/". */
  next?: string;
  /** "new-password" on setup lets password managers offer to generate and save one. */
  passwordAutoComplete: "new-password" | "current-password";
  passwordHint?: string;
}

const noSubscription = () => () => {};
const text = (value: FormDataEntryValue | null): string => (typeof value === "string" ? value : "");

/**
 * Email + password, posted as JSON; field problems from the API show under their field.
 *
 * The fields are read from the form when it is submitted, not kept in state: a password manager
 * (or a quick typist) fills them before the page's scripts have run, and React keeps those values
 * on hydration without calling onChange, so state would have sent an empty email and password.
 */
export function CredentialsForm({ endpoint, submitLabel, next, passwordAutoComplete, passwordHint }: CredentialsFormProps) {
  // false in the server's HTML and while hydrating, true once this component runs in the browser.
  const hydrated = useSyncExternalStore(noSubscription, () => true, () => false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [problems, setProblems] = useState<Problem[]>([]);

  async function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const fields = new FormData(e.currentTarget);
    const email = text(fields.get("email"));
    const password = text(fields.get("password"));
    setBusy(true);
    setError(null);
    setProblems([]);
    try {
      const route = endpoint === "/api/setup" ? api.api.setup : api.api.login;
      const res = await route.$post({ json: { email, password } });
      if (res.ok) {
        location.href = safeNext(next);
        return;
      }
      const body = await errorBody(res);
      const fieldProblems = (body.problems ?? []).filter((p) => p.path === "email" || p.path === "password");
      setProblems(fieldProblems);
      if (res.status === 404 && endpoint === "/api/setup") {
        // Someone finished setup first (another tab): the admin exists, so sign in instead.
        location.href = "/login";
        return;
      }
      setError(fieldProblems.length ? null : (body.error ?? `request failed (${res.status})`));
    } catch {
      setError("could not reach the server; try again");
    } finally {
      setBusy(false);
    }
  }

  const problemFor = (field: string) => problems.filter((p) => p.path === field).map((p) => p.message).join("; ");
  const emailProblem = problemFor("email");
  const passwordProblem = problemFor("password");

  return (
    // method="post" with no action: a submit before hydration (slow network, JS off) posts back to
    // this same page, which renders the form again. The default GET would put the password in
    // the URL, the history and every log on the way. data-hydrated says the submit handler is
    // attached (the browser tests wait for it before they click).
    <form method="post" onSubmit={(e) => void submit(e)} noValidate data-hydrated={hydrated || undefined} className="space-y-4">
      <div>
        <label htmlFor="email" className="block text-sm font-medium text-slate-700">
          Email
        </label>
        <input
          id="email"
          name="email"
          type="email"
          autoComplete="username"
          required
          autoFocus
          aria-invalid={emailProblem ? true : undefined}
          aria-describedby={emailProblem ? "email-problem" : undefined}
          className="mt-1 block w-full rounded-md border border-slate-300 bg-white px-3 py-2 text-sm shadow-sm focus:border-slate-500 focus:outline-none focus:ring-1 focus:ring-slate-500"
        />
        {emailProblem && (
          <p id="email-problem" className="mt-1 text-sm text-red-600">
            {emailProblem}
          </p>
        )}
      </div>
      <div>
        <label htmlFor="password" className="block text-sm font-medium text-slate-700">
          Password
        </label>
        <input
          id="password"
          name="password"
          type="password"
          autoComplete={passwordAutoComplete}
          required
          aria-invalid={passwordProblem ? true : undefined}
          aria-describedby={passwordProblem ? "password-problem" : passwordHint ? "password-hint" : undefined}
          className="mt-1 block w-full rounded-md border border-slate-300 bg-white px-3 py-2 text-sm shadow-sm focus:border-slate-500 focus:outline-none focus:ring-1 focus:ring-slate-500"
        />
        {passwordProblem ? (
          <p id="password-problem" className="mt-1 text-sm text-red-600">
            {passwordProblem}
          </p>
        ) : (
          passwordHint && (
            <p id="password-hint" className="mt-1 text-xs text-slate-500">
              {passwordHint}
            </p>
          )
        )}
      </div>
      {error && (
        <p role="alert" className="rounded-md bg-red-50 px-3 py-2 text-sm text-red-700">
          {error}
        </p>
      )}
      <button
        type="submit"
        disabled={busy}
        className="w-full rounded-md bg-slate-900 px-4 py-2 text-sm font-medium text-white hover:bg-slate-700 disabled:opacity-60"
      >
        {busy ? "…" : submitLabel}
      </button>
    </form>
  );
}
