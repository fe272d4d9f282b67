"use client";
import { useRouter } from "next/navigation";
import { useState } from "react";
import type { ExampleCard } from "@/lib/applets/example-cards";
import { api, errorBody } from "@/lib/ui/api-client";
import { PluginIcon } from "./PluginIcon";

export type { ExampleCard };

/**
 * The empty applets list's ready examples (onboarding): one per trigger type, each working on a
 * laptop as it is. A click saves it as a disabled applet and opens it to edit.
 */
export function ExampleApplets({ examples }: { examples: ExampleCard[] }) {
  const router = useRouter();
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);

  async function use(key: string) {
    setBusy(key);
    setError(null);
    try {
      const res = await api.api.applets["from-example"].$post({ json: { key } });
      if (!res.ok) {
        setError((await errorBody(res)).error ?? `could not create it (${res.status})`);
        return;
      }
      const { applet } = await res.json();
      router.push(`/applets/${applet.id}`);
    } catch {
      setError("could not reach the server; try again");
    } finally {
      setBusy(null);
    }
  }

  return (
    <section aria-labelledby="examples-h" className="mt-6 text-left" data-testid="examples">
      <h2 id="examples-h" className="text-base font-semibold">
        Or start from a ready example
      </h2>
      <p className="mt-1 text-sm text-slate-600">Each works on a laptop as it is (email goes to the outbox, notes to NOTES_ROOT) and is saved disabled, so nothing runs until you switch it on.</p>
      <ul className="mt-3 grid grid-cols-1 gap-3 sm:grid-cols-2 lg:grid-cols-3">
        {examples.map((e) => (
          <li key={e.key} className="flex flex-col rounded-lg bg-white p-4 shadow-sm ring-1 ring-slate-200" data-testid={`example-${e.key}`}>
            <div className="flex items-center gap-1.5" aria-hidden>
              <PluginIcon kind="trigger" type={e.triggerType} />
              <span className="text-slate-400">→</span>
              {e.actionTypes.map((t, i) => (
                <PluginIcon key={i} kind="action" type={t} />
              ))}
            </div>
            <h3 className="mt-2 text-sm font-semibold">{e.name}</h3>
            <p className="mt-1 flex-1 text-xs text-slate-600">{e.description}</p>
            <button type="button" className="btn-secondary mt-3 self-start" onClick={() => void use(e.key)} disabled={busy !== null} aria-label={`Use the example “${e.name}”`}>
              {busy === e.key ? "Creating…" : "Use this example"}
            </button>
          </li>
        ))}
      </ul>
      {error ? (
        <p role="alert" className="mt-2 text-sm text-red-700">
          {error}
        </p>
      ) : null}
    </section>
  );
}
