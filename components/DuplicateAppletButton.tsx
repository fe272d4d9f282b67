"use client";
import { api, errorBody } from "@/lib/ui/api-client";
import { useRouter } from "next/navigation";
import { useState } from "react";

/** "Duplicate": POST /api/applets/:id/duplicate, then the copy's page (it starts disabled). */
export function DuplicateAppletButton({ id }: { id: string }) {
  const router = useRouter();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  async function duplicate() {
    setBusy(true);
    const res = await api.api.applets[":id"].duplicate.$post({ param: { id } }).catch(() => null);
    setBusy(false);
    if (!res?.ok) return setError((res && (await errorBody(res)).error) ?? (res ? `failed (${res.status})` : "network error"));
    router.push(`/applets/${(await res.json()).applet.id}`);
  }
  return (
    <>
      <button type="button" className="btn-secondary" onClick={() => void duplicate()} disabled={busy}>
        {busy ? "Duplicating…" : "Duplicate"}
      </button>
      {error ? <span className="text-sm text-red-700">{error}</span> : null}
    </>
  );
}
