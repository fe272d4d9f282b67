"use client";
import { useRouter } from "next/navigation";
import { useState } from "react";
import { api } from "@/lib/ui/api-client";

export function DeleteAppletButton({ id, name }: { id: string; name: string }) {
  const router = useRouter();
  const [error, setError] = useState<string | null>(null);
  async function remove() {
    if (!window.confirm(`Delete "${name}"? Its events, runs, attachments and trigger state are deleted too. This cannot be undone.`)) return;
    const res = await api.api.applets[":id"].$delete({ param: { id } }).catch(() => null);
    if (!res?.ok) return setError(res ? `failed (${res.status})` : "network error");
    router.push("/");
    router.refresh();
  }
  return (
    <>
      <button type="button" className="btn-danger" onClick={() => void remove()}>
        Delete
      </button>
      {error ? <span className="text-sm text-red-700">{error}</span> : null}
    </>
  );
}
