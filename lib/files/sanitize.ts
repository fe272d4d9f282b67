/**
 * File names that come from templates or from strangers (the `note` action, inbound mail
 * attachments) go through here before they touch the disk.
 *
 * The result uses only `[a-zA-Z0-9._ -]`, is never empty, never `.` or `..`, never starts with a
 * dot (no hidden files: a notes folder is often an Obsidian vault or a git checkout, whose `.obsidian`
 * and `.git` hold configuration and code), never ends with a dot or space (Windows drops them), is
 * never a Windows device name (`CON`, `nul.txt`, `COM1` get a leading `_`), and is at most
 * MAX_FILENAME_LENGTH bytes of UTF-8 with the extension kept, leaving room for a ` (2)` suffix.
 *
 * It never throws: a name that sanitizes to nothing becomes `fallback`. Callers that want to refuse
 * dangerous input with an error (the `note` action does) check before calling this.
 */
export const MAX_FILENAME_LENGTH = 200;

const DISALLOWED = /[^a-zA-Z0-9._ -]+/g;
const DISALLOWED_KEEPING_LETTERS = /[^\p{L}\p{M}\p{N}._ ()-]+/gu;
const WINDOWS_DEVICE = /^(con|prn|aux|nul|com[0-9]|lpt[0-9])$/i;
/** Longest extension kept whole when a long name is cut. */
const MAX_EXTENSION = 16;

export interface SanitizeOptions {
  /**
   * Keep letters, marks and digits of every script (NFC), not only ASCII: "отчёт.pdf" and
   * "报告.pdf" stay readable. Everything else outside `[a-zA-Z0-9._ -]` (separators, control and
   * format characters such as a right-to-left override) still becomes `_`. Inbound attachments.
   */
  keepLetters?: boolean;
}

export function sanitizeFilename(name: string, fallback = "file", opts: SanitizeOptions = {}): string {
  const cleaned = clean(name, opts);
  if (cleaned !== "") return cleaned;
  const safeFallback = clean(fallback, opts);
  return safeFallback !== "" ? safeFallback : "file";
}

function clean(name: string, opts: SanitizeOptions): string {
  // NFKD turns fullwidth and other compatibility forms into ASCII ("．" → ".", "／" → "/") and
  // splits accents from letters, so "Café" keeps its "e" instead of becoming "Caf_". With
  // keepLetters, NFKC does the first and NFC keeps the accents on their letters.
  const ascii = opts.keepLetters
    ? String(name).normalize("NFKC").normalize("NFC")
    : String(name)
        .normalize("NFKD")
        .replace(/\p{M}+/gu, "");
  // Only the last path segment: an attachment called "C:\Users\me\report.pdf" is "report.pdf".
  const base = ascii.split(/[/\\]/).pop() ?? "";
  let out = base.replace(opts.keepLetters ? DISALLOWED_KEEPING_LETTERS : DISALLOWED, "_").replace(/^[. ]+/, "").replace(/[. ]+$/, "");
  if (out === "") return "";
  const stem = out.split(".")[0] ?? "";
  if (WINDOWS_DEVICE.test(stem.trim())) out = `_${out}`;
  return truncate(out);
}

/** At most MAX_FILENAME_LENGTH UTF-8 bytes (file systems count bytes: 255 on ext4), cut between characters. */
function truncate(name: string): string {
  if (Buffer.byteLength(name) <= MAX_FILENAME_LENGTH) return name;
  const dot = name.lastIndexOf(".");
  const ext = dot > 0 && name.length - dot <= MAX_EXTENSION ? name.slice(dot) : "";
  let budget = MAX_FILENAME_LENGTH - Buffer.byteLength(ext);
  let stem = "";
  for (const ch of name.slice(0, name.length - ext.length)) {
    budget -= Buffer.byteLength(ch);
    if (budget < 0) break;
    stem += ch;
  }
  return (stem.replace(/[. ]+$/, "") || "file") + ext;
}
