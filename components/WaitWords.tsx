"use client";
import { useIsClient } from "@/components/LocalTime";
import { waitSummary } from "@/lib/waits/words";

const KINDS = ["delay", "until", "for_call", "for_approval"] as const;
type Kind = (typeof KINDS)[number];
const capital = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

/**
 * What a waiting run waits for, in the reader's own time zone like every time on the page: the
 * server renders the words stored with the wait (in the applet's zone), and the browser says them
 * again from the wait's detail (its step's output) once hydrated, as LocalTime does.
 */
export function WaitWords({ stored, kind, detail }: { stored: string; kind: string; detail: unknown }) {
  const client = useIsClient();
  const d = typeof detail === "object" && detail !== null && !Array.isArray(detail) ? (detail as Record<string, unknown>) : null;
  if (!client || !d || !(KINDS as readonly string[]).includes(kind)) return <>{capital(stored)}</>;
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
  const timeoutAt = typeof d.timeout_at === "string" ? d.timeout_at : null;
  return <>{capital(waitSummary({ kind: kind as Kind, detail: { ...d, timezone: zone }, timeoutAt }, new Date()))}</>;
}
