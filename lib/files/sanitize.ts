/**
 * File names that come from templates or from strangers (the `note` action, inbound mail
 * attachments) go through here before they touch the disk.
 *
 * The result uses only `[a-zA-Z0-9._ -]`, is never empty, never `.` or `..`, never starts with a
 * dot (no hidden files: a notes folder is often an Obsidian vault or a git checkout, whose `.obsidian`
 * and `.git` hold configuration and code), never ends with a dot or space (Windows drops them), is
 * never a Windows device name (`CON`, `nul.txt`, `COM1` get a leading `_`), and is at most
 * MAX_FILENAME_LENGTH characters with the extension kept, leaving room for a ` (2)` suffix.
 *
 * It never throws: a name that sanitizes to nothing becomes `fallback`. Callers that want to refuse
 * dangerous input with an error (the `note` action does) check before calling this.
 */
export const MAX_FILENAME_LENGTH = 200;

const DISALLOWED = /[^a-zA-Z0-9._ -]+/g;
const WINDOWS_DEVICE = /^(con|prn|aux|nul|com[0-9]|lpt[0-9])$/i;
/** Longest extension kept whole when a long name is cut. */
const MAX_EXTENSION = 16;

export function sanitizeFilename(name: string, fallback = "file"): string {
  const cleaned = clean(name);
  if (cleaned !== "") return cleaned;
  const safeFallback = clean(fallback);
  return safeFallback !== "" ? safeFallback : "file";
}

function clean(name: string): string {
  // NFKD turns fullwidth and other compatibility forms into ASCII ("．" → ".", "／" → "/") and
  // splits accents from letters, so "Café" keeps its "e" instead of becoming "Caf_".
  const ascii = String(name)
    .normalize("NFKD")
    .replace(/\p{M}+/gu, "");
  // Only the last path segment: an attachment called "C:\Users\me\report.pdf" is "report.pdf".
  const base = ascii.split(/[/\\]/).pop() ?? "";
  let out = base.replace(DISALLOWED, "_").replace(/^[. ]+/, "").replace(/[. ]+$/, "");
  if (out === "") return "";
  const stem = out.split(".")[0] ?? "";
  if (WINDOWS_DEVICE.test(stem.trim())) out = `_${out}`;
  return truncate(out);
}

function truncate(name: string): string {
  if (name.length <= MAX_FILENAME_LENGTH) return name;
  const dot = name.lastIndexOf(".");
  const ext = dot > 0 && name.length - dot <= MAX_EXTENSION ? name.slice(dot) : "";
  const stem = name.slice(0, MAX_FILENAME_LENGTH - ext.length).replace(/[. ]+$/, "");
  return (stem || "file") + ext;
}
