"use client";
import { useSyncExternalStore } from "react";
import { relativeTime } from "@/lib/ui/format";

const subscribe = () => () => {};
/** True in the browser after hydration; false while rendering on the server. */
export const useIsClient = () => useSyncExternalStore(subscribe, () => true, () => false);

/**
 * A timestamp in the reader's own time zone. The server does not know that zone, so it renders UTC
 * and the browser swaps in local time after hydration (no hydration mismatch).
 */
export function LocalTime({ iso, relative = false, className }: { iso: string | null | undefined; relative?: boolean; className?: string }) {
  const client = useIsClient();
  if (!iso) return <span className={className ?? "text-slate-400"}>–</span>;
  const d = new Date(iso);
  const text = client
    ? d.toLocaleString(undefined, { year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", second: "2-digit" })
    : `${iso.slice(0, 19).replace("T", " ")} UTC`;
  return (
    <time dateTime={iso} title={iso} className={className}>
      {text}
      {relative && client ? <span className="ml-1 text-slate-500">({relativeTime(iso, Date.now())})</span> : null}
    </time>
  );
}
