"use client";
import { useIsClient } from "@/components/LocalTime";

/**
 * IANA zones from the browser. The server renders only the current value: Node's and the
 * browser's zone lists can differ, which would break hydration.
 */
export function TimezoneSelect({ id, value, onChange, allowEmpty, emptyLabel }: { id: string; value: string; onChange: (v: string) => void; allowEmpty?: boolean; emptyLabel?: string }) {
  const client = useIsClient();
  let zones: string[] = [];
  if (client) {
    try {
      zones = Intl.supportedValuesOf("timeZone");
    } catch {
      zones = [];
    }
  }
  if (value && !zones.includes(value)) zones = [value, ...zones];
  if (!zones.includes("UTC")) zones = [...zones, "UTC"];
  return (
    <select id={id} value={value} onChange={(e) => onChange(e.target.value)} className="input">
      {allowEmpty ? <option value="">{emptyLabel ?? "Default"}</option> : null}
      {zones.map((z) => (
        <option key={z} value={z}>
          {z.replaceAll("_", " ")}
        </option>
      ))}
    </select>
  );
}
