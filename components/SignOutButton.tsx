"use client";
import { api } from "@/lib/ui/api-client";

export function SignOutButton() {
  async function signOut() {
    await api.api.logout.$post().catch(() => null);
    window.location.href = "/login";
  }
  return (
    <button type="button" onClick={() => void signOut()} className="w-full rounded px-3 py-2 text-left text-sm text-slate-300 hover:bg-slate-800 hover:text-white">
      Sign out
    </button>
  );
}
