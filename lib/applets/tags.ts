/**
 * Applet tags: short labels for the applets list's filter. A tag is 1–32 characters of
 * letters, digits, spaces, `-`, `_`, `.`, `/` and `:`, trimmed, with inner runs of spaces made one;
 * an applet has at most 12, each once (compared without case; the first spelling is kept).
 * Pure, with no Node imports: the editor's tag field uses the same rule.
 */
export const TAG_MAX_LENGTH = 32;
export const TAGS_MAX = 12;
const TAG_CHARS = /^[\p{L}\p{N} ._:/-]+$/u;

/** The tags cleaned up, or the problem with them in words the tag field shows. */
export function normaliseTags(input: unknown): { ok: true; tags: string[] } | { ok: false; message: string } {
  if (input === undefined || input === null) return { ok: true, tags: [] };
  if (!Array.isArray(input)) return { ok: false, message: "tags must be a list of words" };
  const tags: string[] = [];
  const seen = new Set<string>();
  for (const raw of input) {
    if (typeof raw !== "string") return { ok: false, message: "each tag must be text" };
    const tag = raw.trim().replace(/\s+/g, " ");
    if (!tag) continue;
    if (tag.length > TAG_MAX_LENGTH) return { ok: false, message: `the tag "${tag.slice(0, 40)}…" is longer than ${TAG_MAX_LENGTH} characters` };
    if (!TAG_CHARS.test(tag)) return { ok: false, message: `the tag "${tag}" may only hold letters, digits, spaces and - _ . / :` };
    const key = tag.toLowerCase();
    if (seen.has(key)) continue;
    seen.add(key);
    tags.push(tag);
  }
  if (tags.length > TAGS_MAX) return { ok: false, message: `at most ${TAGS_MAX} tags (got ${tags.length})` };
  return { ok: true, tags };
}

/** "work, home , ops" → ["work", "home", "ops"]: the tag field's text. */
export const splitTags = (text: string): string[] => text.split(",").map((t) => t.trim()).filter(Boolean);

/** Whether an applet carries this tag (without case). */
export const hasTag = (tags: readonly string[], tag: string): boolean => tags.some((t) => t.toLowerCase() === tag.toLowerCase());
