import { randomBytes, randomUUID } from "node:crypto";
import { nowMs } from "./clock";

/**
 * UUIDv7 (RFC 9562): 48 bits of Unix milliseconds, a 12-bit counter, then random bits. Ids made
 * later sort later, so inserts land at the end of the primary-key B-tree instead of at random
 * pages (the webhook hot path inserts two rows per request). The random part comes from
 * randomUUID, which draws on Node's cached entropy pool instead of a syscall per id.
 */
let lastMs = 0;
let seq = 0;
export function newId(): string {
  let ms = nowMs();
  if (ms > lastMs) {
    lastMs = ms;
    seq = 0;
  } else {
    // Same millisecond (or the clock stepped back): keep counting so ids stay in order.
    seq++;
    if (seq > 0xfff) {
      lastMs++;
      seq = 0;
    }
    ms = lastMs;
  }
  const time = ms.toString(16).padStart(12, "0");
  // randomUUID(): xxxxxxxx-xxxx-4xxx-Vxxx-xxxxxxxxxxxx; keep its variant and last 62 random bits.
  return `${time.slice(0, 8)}-${time.slice(8)}-7${seq.toString(16).padStart(3, "0")}-${randomUUID().slice(19)}`;
}

/** Webhook tokens: 32 random bytes, base64url (spec: applets.webhook_token). */
export const newWebhookToken = (): string => randomBytes(32).toString("base64url");
