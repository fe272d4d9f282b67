import { randomBytes } from "node:crypto";

/**
 * UUIDv7 (RFC 9562): 48 bits of Unix milliseconds, then random bits. Ids made later sort later,
 * so inserts land at the end of the primary-key B-tree instead of at random pages (the webhook
 * hot path inserts two rows per request). A counter in the random part keeps ids made in the same
 * millisecond in order.
 */
let lastMs = 0;
let seq = 0;
export function newId(): string {
  let ms = Date.now();
  if (ms <= lastMs) {
    seq = (seq + 1) & 0xfff;
    if (seq === 0) lastMs += 1;
    ms = lastMs;
  } else {
    lastMs = ms;
    seq = randomBytes(2).readUInt16BE(0) & 0x7ff;
  }
  const b = randomBytes(16);
  b.writeUIntBE(ms, 0, 6);
  b[6] = 0x70 | (seq >> 8);
  b[7] = seq & 0xff;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const h = b.toString("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** Webhook tokens: 32 random bytes, base64url (spec: applets.webhook_token). */
export const newWebhookToken = (): string => randomBytes(32).toString("base64url");
