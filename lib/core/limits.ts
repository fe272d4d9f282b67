/** The spec's bounds, in one place. */
export const LIMITS = {
  webhookBodyBytes: 1024 * 1024,
  storedPayloadBytes: 64 * 1024,
  logLines: 100,
  logLineBytes: 1024,
  seenKeys: 500,
  runsPageSize: 50,
} as const;

/**
 * Caps a JSON value at `maxBytes` of serialized text, keeping its shape where it can: long strings
 * are shortened first (largest cut first), and only when that is not enough the whole value is
 * replaced by a preview. Returns whether anything was cut, so callers can store `truncated: true`.
 */
export function capJson(value: unknown, maxBytes: number = LIMITS.storedPayloadBytes): { value: unknown; truncated: boolean } {
  const text = JSON.stringify(value) ?? "null";
  if (Buffer.byteLength(text) <= maxBytes) return { value, truncated: false };
  for (let limit = Math.floor(maxBytes / 4); limit >= 64; limit = Math.floor(limit / 2)) {
    const cut = shortenStrings(value, limit);
    if (Buffer.byteLength(JSON.stringify(cut)) <= maxBytes) return { value: cut, truncated: true };
  }
  return { value: { preview: truncateUtf8(text, maxBytes - 64) }, truncated: true };
}

function shortenStrings(value: unknown, limit: number): unknown {
  if (typeof value === "string") return value.length > limit ? value.slice(0, limit) + "…" : value;
  if (Array.isArray(value)) return value.map((v) => shortenStrings(v, limit));
  if (value && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = shortenStrings(v, limit);
    return out;
  }
  return value;
}

/** Cuts a string to at most `maxBytes` UTF-8 bytes without splitting a character. */
export function truncateUtf8(text: string, maxBytes: number): string {
  const buf = Buffer.from(text);
  if (buf.length <= maxBytes) return text;
  return buf.subarray(0, maxBytes).toString("utf8").replace(/\uFFFD$/, "");
}
