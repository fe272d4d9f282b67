import { isMessageStatus } from "./status";
import { readInstant } from "./time";
import type { MessageEventPayload } from "./types";

const CHANNEL = /^[a-z][a-z0-9_-]{0,63}$/;
export const MESSAGE_PREVIEW_LENGTH = 160;

/** The event type a channel emits for its messages: "email" → "email.message". */
export function messageEventType(channel: string): `${string}.message` {
  if (!CHANNEL.test(channel)) throw new TypeError(`@vibedout/automations: not a channel name: ${JSON.stringify(channel)}`);
  return `${channel}.message`;
}

/**
 * At most 160 characters of `text` on one line: whitespace runs become one space, and a cut is
 * marked with "…". Counted in code points so an emoji is never split in half.
 */
export function messagePreview(text: string | null | undefined, max = MESSAGE_PREVIEW_LENGTH): string {
  const flat = (text ?? "").replace(/\s+/g, " ").trim();
  const chars = Array.from(flat);
  if (chars.length <= max) return flat;
  return `${chars.slice(0, Math.max(0, max - 1)).join("").trimEnd()}…`;
}

function optionalString(value: unknown, max: number): string | undefined | false {
  if (value === undefined || value === null) return undefined;
  return typeof value === "string" && value.length <= max ? value : false;
}

/**
 * Reads a message event's payload from the bus, untrusted: the payload in its own shape, or null
 * when it is not one. An over-long preview is shortened rather than refused.
 */
export function parseMessageEventPayload(input: unknown): MessageEventPayload | null {
  if (input === null || typeof input !== "object" || Array.isArray(input)) return null;
  const v = input as Record<string, unknown>;
  if (typeof v.channel !== "string" || !CHANNEL.test(v.channel)) return null;
  if (v.direction !== "inbound" && v.direction !== "outbound") return null;
  if (typeof v.messageId !== "string" || v.messageId === "" || v.messageId.length > 512) return null;
  if (!isMessageStatus(v.status)) return null;
  if (typeof v.at !== "string" || readInstant(v.at) === null) return null;
  const address = optionalString(v.address, 512);
  const runId = optionalString(v.runId, 256);
  const error = optionalString(v.error, 4096);
  const preview = typeof v.preview === "string" ? messagePreview(v.preview) : optionalString(v.preview, 0);
  if (address === false || runId === false || error === false || preview === false) return null;
  return {
    channel: v.channel,
    direction: v.direction,
    messageId: v.messageId,
    status: v.status,
    at: v.at,
    ...(address !== undefined ? { address } : {}),
    ...(preview !== undefined ? { preview } : {}),
    ...(runId !== undefined ? { runId } : {}),
    ...(error !== undefined ? { error } : {}),
  };
}
