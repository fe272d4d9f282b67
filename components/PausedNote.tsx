"use client";
import { useIsClient } from "@/components/LocalTime";

/**
 * Why auto-pause disabled an applet, and when ("Paused after 5 failed runs in a row at
 * 09:14 — fix and enable"). The time is the reader's own once hydrated (the server renders UTC).
 */
export function PausedNote({ reason, at, className }: { reason: string; at: string | null; className?: string }) {
  const client = useIsClient();
  const time = at ? (client ? new Date(at).toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit" }) : `${at.slice(11, 16)} UTC`) : null;
  return (
    <span className={className} data-testid="paused-note">
      {reason}
      {time ? (
        <>
          {" at "}
          <time dateTime={at ?? undefined} title={at ?? undefined}>
            {time}
          </time>
        </>
      ) : null}{" "}
      — fix and enable
    </span>
  );
}
