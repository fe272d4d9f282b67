import { formatInTimeZone } from "date-fns-tz";

/** `{{now_local}}`: an instant as ISO 8601 in the applet's zone, with its offset (UTC stays `Z`). */
export const localIso = (d: Date, timezone: string): string =>
  timezone === "UTC" ? d.toISOString() : formatInTimeZone(d, timezone, "yyyy-MM-dd'T'HH:mm:ss.SSSXXX");
