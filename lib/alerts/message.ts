import type { AlertRow } from "../db/store/types";

/** An alert as a person reads it: a title, the text (plain words, a link on its own line) and the link. */
export interface AlertMessage {
  title: string;
  text: string;
  link: string;
}

const MAX_ERROR = 500;

/** The error as a sentence: the executor's prefix dropped, one line, cut to a readable length. */
export function plainError(error: string | null): string {
  if (!error) return "no error message was recorded";
  const one = error.replace(/^executor: /, "").replace(/\s+/g, " ").trim();
  return one.length > MAX_ERROR ? `${one.slice(0, MAX_ERROR - 1)}…` : one;
}

/**
 * "14:05 Europe/Berlin": an alert is read away from the UI (a phone, a chat), where the reader's
 * zone is unknown, so its times are in the applet's zone (the one its schedule and date filters
 * use, UTC when it has none) and the zone is named, so no one takes it for their own.
 */
export function zonedTime(iso: string, zone: string): string {
  let hm: string;
  try {
    hm = new Intl.DateTimeFormat("en-GB", { timeZone: zone, hour: "2-digit", minute: "2-digit", hourCycle: "h23" }).format(new Date(iso));
  } catch {
    return `${iso.slice(11, 16)} UTC`;
  }
  return `${hm} ${zone}`;
}

const textOf = (v: unknown): string => (typeof v === "string" ? v : "");

/**
 * One message for the alerts of one applet sent together (pure): the latest failure with its run
 * link and "and N more" for the others folded into it since the last message, a trigger that keeps
 * failing, an auto-pause, and a recovery when the batch ends with one.
 */
export function composeMessage(batch: readonly AlertRow[], publicUrl: string, zone = "UTC"): AlertMessage {
  const hhmm = (iso: string) => zonedTime(iso, zone);
  const last = batch[batch.length - 1];
  if (!last) throw new Error("alerts: composeMessage needs at least one alert");
  const name = last.appletName ?? "an applet that was deleted";
  const appletLink = last.appletId ? `${publicUrl}/applets/${last.appletId}` : `${publicUrl}/settings#alerts`;
  if (last.kind === "test") {
    return { title: "whenthen: test alert", text: `This is a test of the alert channel, sent from Settings.\n${appletLink}`, link: appletLink };
  }
  const failures = batch.filter((a) => a.kind === "failure");
  const trigger = batch.filter((a) => a.kind === "trigger").at(-1);
  const paused = batch.filter((a) => a.kind === "paused").at(-1);
  const quiet = batch.filter((a) => a.kind === "quiet").at(-1);
  const recovered = last.kind === "recovery";
  const lines: string[] = [];
  let link = appletLink;
  const latest = failures.at(-1);
  if (latest) {
    const runLink = `${publicUrl}/runs/${latest.runId}`;
    link = runLink;
    const retrying = latest.detail.status === "retrying" && typeof latest.detail.next_attempt_at === "string";
    const how =
      latest.detail.status === "dead"
        ? `went dead after ${Number(latest.detail.attempt) || 1} attempts`
        : retrying
          ? `failed attempt ${Number(latest.detail.attempt) || 1} of ${Number(latest.detail.max_attempts) || 1} and will retry at ${hhmm(String(latest.detail.next_attempt_at))}`
          : "failed";
    lines.push(`A run of "${name}" ${how}: ${plainError(latest.error)}`);
    if (failures.length > 1) lines.push(`…and ${failures.length - 1} more failed run${failures.length - 1 === 1 ? "" : "s"} since ${hhmm(failures[0]!.createdAt)}.`);
    lines.push(runLink);
  }
  if (trigger) {
    lines.push(`The trigger of "${name}" failed ${Number(trigger.detail.failures) || 1} checks in a row: ${plainError(trigger.error)}`);
    lines.push(appletLink);
  }
  if (quiet && !(recovered && last.detail.of === "quiet")) {
    lines.push(`"${name}" has gone quiet. ${textOf(quiet.detail.text)}`.trim());
    if (!lines.some((l) => l.startsWith("http"))) lines.push(appletLink);
  }
  if (paused) {
    lines.push(`"${name}" was paused after ${Number(paused.detail.streak) || 0} failed runs at ${hhmm(paused.createdAt)}: fix it and enable it again.`);
    if (!latest) lines.push(appletLink);
  }
  if (recovered) {
    lines.push(
      last.detail.of === "trigger"
        ? `The trigger of "${name}" works again.`
        : last.detail.of === "quiet"
          ? `"${name}" is no longer quiet. ${textOf(last.detail.text)}`.trim()
          : `"${name}" ${lines.length ? "has since succeeded again" : "succeeded again"}${last.runId ? ` (run ${last.runId})` : ""}.`,
    );
    if (!lines.some((l) => l.startsWith("http"))) lines.push(appletLink);
  }
  const title = recovered
    ? last.detail.of === "quiet"
      ? `whenthen: "${name}" is active again`
      : `whenthen: "${name}" recovered`
    : quiet && !latest && !paused
      ? `whenthen: "${name}" has gone quiet`
    : paused
      ? `whenthen: "${name}" was paused`
      : latest
        ? `whenthen: "${name}" ${failures.length > 1 ? `failed ${failures.length} times` : "failed"}`
        : `whenthen: the trigger of "${name}" keeps failing`;
  return { title, text: lines.join("\n"), link };
}
