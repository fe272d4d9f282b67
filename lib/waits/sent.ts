import type { Step } from "../db/store/types/runs";

/**
 * Where a wait's links went, read from the run's journal (pure): the action steps that succeeded
 * since the run's previous wait and whose rendered input carries this wait's links (its resume URL,
 * which its approve and deny links extend), or that sent them as approval buttons. Each is said by
 * its service and recipient as the run log shows it: the `to` addresses of an email, a Telegram
 * chat, an ntfy topic; a webhook URL is a secret and never shown (Slack, Discord: the service).
 */
export interface SentLinks {
  /** "ops@example.com", "ops@example.com and 2 others", "Slack", "Telegram chat 123456789", "ntfy topic alerts". */
  to: string;
  /** When the step finished sending (ISO). */
  at: string;
}

export function sentLinks(steps: readonly Step[], resumeUrl: string): SentLinks[] {
  let from = 0;
  steps.forEach((s, i) => {
    if (s.kind === "wait") from = i + 1;
  });
  const out: SentLinks[] = [];
  for (const s of steps.slice(from)) {
    if (s.kind !== "action" || s.status !== "succeeded" || s.input === undefined) continue;
    const input = (typeof s.input === "object" && s.input !== null ? s.input : {}) as Record<string, unknown>;
    // Pushover ignores approval_buttons (ntfy's field, kept when the provider changed).
    const buttons = input.approval_buttons === true && !(s.name === "push" && input.provider !== "ntfy");
    const carries = buttons || JSON.stringify(s.input).includes(resumeUrl);
    if (!carries) continue;
    out.push({ to: recipientWords(s.name, input), at: new Date(Date.parse(s.started_at) + (s.duration_ms || 0)).toISOString() });
  }
  return out;
}

const SERVICE: Record<string, string> = { slack: "Slack", discord: "Discord", telegram: "Telegram", push: "a push notification", email: "email", gotify: "Gotify", matrix: "Matrix", note: "a note", mqtt: "MQTT", homeassistant: "Home Assistant", sheets: "Google Sheets" };

/** A value the run log may show: text, not redacted, not a template left over. */
const shown = (v: unknown, max = 60): string | null => {
  if (typeof v !== "string" && typeof v !== "number") return null;
  const s = String(v).trim();
  if (!s || s.includes("[redacted]") || s.includes("{{")) return null;
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
};

/** The recipient in words; the service's name where the recipient is a secret URL or unknown. */
export function recipientWords(type: string, input: Record<string, unknown>): string {
  switch (type) {
    case "email": {
      const addresses = typeof input.to === "string" ? [...input.to.matchAll(/[^\s<>,;"']+@[^\s<>,;"']+/g)].map((m) => m[0]) : [];
      const first = addresses[0] ? shown(addresses[0], 40) : null;
      if (!first) return "email";
      const rest = addresses.length - 1;
      return rest > 0 ? `${first} and ${rest} other${rest === 1 ? "" : "s"}` : first;
    }
    case "telegram": {
      const chat = shown(input.chat_id, 40);
      return chat ? `Telegram ${chat.startsWith("@") ? chat : `chat ${chat}`}` : "Telegram";
    }
    case "push": {
      if (input.provider === "pushover") return "Pushover";
      const topic = shown(input.topic, 64);
      return topic ? `ntfy topic ${topic}` : "ntfy";
    }
    case "matrix": {
      const room = shown(input.room);
      return room ? `Matrix room ${room}` : "Matrix";
    }
    case "http": {
      // Only the host: a URL's path and query often carry a token.
      try {
        return typeof input.url === "string" && !input.url.includes("[redacted]") ? new URL(input.url).host : "an HTTP request";
      } catch {
        return "an HTTP request";
      }
    }
    default:
      return SERVICE[type] ?? type;
  }
}

/** "a", "a and b", "a, b and c", "a, b and 3 more": the same recipient once. */
export function sentToWords(sent: readonly Pick<SentLinks, "to">[]): string {
  const names = [...new Set(sent.map((s) => s.to))];
  if (names.length <= 3) return names.length <= 1 ? (names[0] ?? "") : `${names.slice(0, -1).join(", ")} and ${names[names.length - 1]}`;
  return `${names.slice(0, 2).join(", ")} and ${names.length - 2} more`;
}
