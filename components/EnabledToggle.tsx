"use client";
import { useRouter } from "next/navigation";
import { useState } from "react";
import { api } from "@/lib/ui/api-client";

/** The applets table's switch: POST enable/disable, shown at once, undone if the server refuses. */
export function EnabledToggle({ id, enabled, name }: { id: string; enabled: boolean; name: string }) {
  const router = useRouter();
  const [on, setOn] = useState(enabled);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  async function toggle() {
    const next = !on;
    setOn(next);
    setBusy(true);
    setError(null);
    const route = api.api.applets[":id"][next ? "enable" : "disable"];
    const res = await route.$post({ param: { id } }).catch(() => null);
    setBusy(false);
    if (!res?.ok) {
      setOn(!next);
      setError(res ? `failed (${res.status})` : "network error");
      return;
    }
    router.refresh();
  }

  return (
    <span className="inline-flex items-center gap-2">
      <button
        type="button"
        role="switch"
        aria-checked={on}
        aria-busy={busy}
        aria-label={`${on ? "Disable" : "Enable"} ${name}`}
        disabled={busy}
        onClick={() => void toggle()}
        className={`relative inline-flex h-5 w-9 shrink-0 items-center rounded-full transition-colors disabled:opacity-60 ${on ? "bg-green-600" : "bg-slate-300"}`}
      >
        <span className={`inline-block h-4 w-4 rounded-full bg-white shadow transition-transform ${on ? "translate-x-4" : "translate-x-0.5"}`} />
      </button>
      {error ? <span className="text-xs text-red-700">{error}</span> : null}
    </span>
  );
}
