"use client";
import { useRouter } from "next/navigation";
import { useState } from "react";

/** "Duplicate": POST /api/applets/:id/duplicate, then the copy's page (it starts disabled). */
export function DuplicateAppletButton({ id }: { id: string }) {
  const router = useRouter();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  async function duplicate() {
    setBusy(true);
    const res = await fetch(`/api/applets/${encodeURIComponent(id)}/duplicate`, { method: "POST" }).catch(() => null);
    const body = res ? ((await res.json().catch(() => ({}))) as { applet?: { id: string }; error?: string }) : null;
    setBusy(false);
    if (!res?.ok || !body?.applet) return setError(body?.error ?? (res ? `failed (${res.status})` : "network error"));
    router.push(`/applets/${body.applet.id}`);
  }
  return (
    <>
      <button type="button" className="btn-secondary" onClick={duplicate} disabled={busy}>
        {busy ? "Duplicating…" : "Duplicate"}
      </button>
      {error ? <span className="text-sm text-red-700">{error}</span> : null}
    </>
  );
}
