import { detect } from "chardet";
import iconv from "iconv-lite";
import { registerEbcdic } from "./ebcdic";

registerEbcdic();

/**
 * Feed bytes → text. A feed's encoding is said in up to three places; they are read in this order:
 *
 * 1. a byte order mark (UTF-8, UTF-16 LE/BE, UTF-32 LE/BE): bytes that can only be that encoding,
 *    so it wins over any label (as in the WHATWG Encoding Standard's decode);
 * 2. the HTTP `Content-Type` charset;
 * 3. the XML declaration (`<?xml version="1.0" encoding="ISO-8859-1"?>`), read in the byte layout
 *    the document starts with, so a UTF-16 feed without a BOM is found too;
 * 4. otherwise UTF-8; bytes that are not valid UTF-8 are an undeclared legacy feed: a Japanese,
 *    Chinese or Korean multi-byte encoding when chardet recognises one (Shift_JIS, EUC-JP, GB18030,
 *    Big5, EUC-KR), else windows-1252 (chardet's guesses among single-byte code pages are too often
 *    wrong to act on).
 *
 * Labels mean what browsers make of them: `iso-8859-1`, `latin1` and `us-ascii` are windows-1252,
 * whose 0x80–0x9F are the curly quotes and dashes such feeds really contain. An unknown label is
 * skipped in favour of the next source.
 */
export interface DecodedFeed {
  text: string;
  /** The encoding used, as iconv-lite names it. */
  encoding: string;
}

const BOMS: [number[], string][] = [
  [[0x00, 0x00, 0xfe, 0xff], "utf-32be"],
  [[0xff, 0xfe, 0x00, 0x00], "utf-32le"],
  [[0xef, 0xbb, 0xbf], "utf-8"],
  [[0xfe, 0xff], "utf-16be"],
  [[0xff, 0xfe], "utf-16le"],
];

/** `<?` in the layouts of XML 1.0 Appendix F, for documents without a BOM. */
const LAYOUTS: [number[], string][] = [
  [[0x00, 0x00, 0x00, 0x3c], "utf-32be"],
  [[0x3c, 0x00, 0x00, 0x00], "utf-32le"],
  [[0x00, 0x3c, 0x00, 0x3f], "utf-16be"],
  [[0x3c, 0x00, 0x3f, 0x00], "utf-16le"],
  // `<?xm` in EBCDIC: the declaration is read in cp037, where its ASCII letters have the same bytes in every EBCDIC page.
  [[0x4c, 0x6f, 0xa7, 0x94], "cp037"],
];

const WHATWG_ALIASES: Record<string, string> = {
  "iso-8859-1": "windows-1252",
  "iso8859-1": "windows-1252",
  iso_8859_1: "windows-1252",
  "iso-ir-100": "windows-1252",
  latin1: "windows-1252",
  l1: "windows-1252",
  "us-ascii": "windows-1252",
  ascii: "windows-1252",
  "x-user-defined": "windows-1252",
  "utf-16": "utf-16le",
  "utf-32": "utf-32le",
};

const startsWith = (bytes: Uint8Array, prefix: number[]): boolean => prefix.every((b, i) => bytes[i] === b);

/** An iconv-lite encoding for a charset label, or null when the label names none. */
export function encodingForLabel(label: string | null | undefined): string | null {
  if (!label) return null;
  const l = label.trim().replace(/^["']|["']$/g, "").toLowerCase();
  if (l === "") return null;
  const name = WHATWG_ALIASES[l] ?? l;
  return iconv.encodingExists(name) ? name : null;
}

/** The `charset` parameter of a Content-Type header value. */
export function charsetOf(contentType: string | undefined): string | null {
  const m = /;\s*charset\s*=\s*("?)([^";\s]+)\1/i.exec(contentType ?? "");
  return m ? m[2]! : null;
}

function declaredEncoding(bytes: Buffer): string | null {
  const layout = LAYOUTS.find(([prefix]) => startsWith(bytes, prefix))?.[1];
  const head = bytes.subarray(0, 1024);
  // The declaration is ASCII; in a UTF-16/32 layout it is read in that layout.
  const text = layout ? iconv.decode(head, layout) : head.toString("latin1");
  const m = /^\s*<\?xml[^>]*?\bencoding\s*=\s*["']([A-Za-z0-9._:-]+)["']/.exec(text);
  // The byte layout decides the width and byte order: a declaration says only "UTF-16" (or keeps
  // an old label after a conversion). An EBCDIC document names its own page.
  if (layout === "cp037") return encodingForLabel(m?.[1]) ?? layout;
  return layout ?? encodingForLabel(m?.[1]);
}

function isValidUtf8(bytes: Buffer): boolean {
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    return true;
  } catch {
    return false;
  }
}

const MULTI_BYTE = new Set(["Shift_JIS", "EUC-JP", "GB18030", "Big5", "EUC-KR"]);

function guessMultiByte(bytes: Buffer): string | null {
  const guess = detect(bytes.subarray(0, 64 * 1024));
  return guess && MULTI_BYTE.has(guess) ? encodingForLabel(guess) : null;
}

export function decodeFeed(bytes: Buffer, contentType?: string): DecodedFeed {
  const bom = BOMS.find(([prefix]) => startsWith(bytes, prefix));
  let encoding = bom?.[1] ?? encodingForLabel(charsetOf(contentType)) ?? declaredEncoding(bytes);
  if (encoding === null) encoding = isValidUtf8(bytes) ? "utf-8" : (guessMultiByte(bytes) ?? "windows-1252");
  // iconv-lite strips a BOM of the encoding it decodes; one left by a mislabelled feed goes here.
  const text = iconv.decode(bytes, encoding).replace(/^\uFEFF/, "");
  return { text, encoding };
}
