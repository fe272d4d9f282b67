import { createHash } from "node:crypto";
import iconv from "iconv-lite";
import type { AddressObject, EmailAddress, ParsedMail } from "mailparser";
import { parseDateText } from "../core/dates";
import { sanitizeFilename } from "../files/sanitize";
import { LOOP_HEADER } from "./headers";

/**
 * Inbound mail → the email trigger's fields (spec Triggers §4). Pure apart from mailparser: no
 * clock (the receive time is passed in), no disk, no database.
 */

export interface EmailAttachment {
  /**
   * Sanitized for the file system (lib/files/sanitize, letters of every script kept) and unique
   * within the message, so it is also the stored name.
   */
  filename: string;
  /** The name as the sender wrote it ("" when the attachment had none). */
  original_filename: string;
  content_type: string;
  size: number;
  /** Signed download link; null when the file was not stored (over 5 MB each / 20 MB per message). */
  url: string | null;
}

export interface NormalizedEmail {
  /** Sender address, lowercased domain kept as sent ("" when the message has no From). */
  from: string;
  from_name: string;
  to: string[];
  cc: string[];
  /**
   * Listed so a template can ask for it explicitly; nothing ever sends to it on its own (the
   * email action sends only to its rendered `to`).
   */
  reply_to: string[];
  subject: string;
  /** The plain-text body (mailparser derives it from the HTML part when there is no text part). */
  text: string;
  html: string | null;
  /** ISO UTC; the receive time when the Date header is missing or unreadable (see `date_source`). */
  date: string;
  /** "header": `date` is the message's Date header; "received": it had none we could read. */
  date_source: "header" | "received";
  /** With angle brackets, as in the header; generated from the raw bytes when absent. */
  message_id: string;
  attachments: EmailAttachment[];
  /** First non-blank line of `text`, trimmed. */
  text_first_line: string;
}

export interface ParsedInbound {
  email: NormalizedEmail;
  /** Attachment bodies, index-aligned with `email.attachments`. */
  contents: Buffer[];
  /** The message carries the marker the email action puts on what it sends (mail loop guard). */
  sentByWhenthen: boolean;
  /** What could not be read as sent (an unreadable Date header); the message is still delivered. */
  warnings: string[];
}


/** The largest message taken, by the SMTP receiver and the IMAP trigger alike. */
export const MAIL_MAX_BYTES = 25 * 1024 * 1024;

export const GENERATED_MESSAGE_ID_DOMAIN = "whenthen.generated";
const MAX_FIRST_LINE = 500;

/** A Message-ID for a message without one: the same bytes always give the same id (dedupe). */
export function generatedMessageId(raw: Buffer): string {
  return `<${createHash("sha256").update(raw).digest("hex")}@${GENERATED_MESSAGE_ID_DOMAIN}>`;
}

export async function parseInbound(raw: Buffer, opts: { receivedAt: Date }): Promise<ParsedInbound> {
  // mailparser and its charset tables cost the worker ~25 MB of RSS (bench/RESULTS.md, worker
  // parts): loaded with the first message, not at start-up.
  const { simpleParser } = await import("mailparser");
  const parsed = await simpleParser(withUtf8Headers(raw), {
    // textAsHtml and link rewriting are never used; skipping them saves work on big messages.
    skipTextToHtml: true,
    skipTextLinks: true,
    skipImageLinks: true,
  });
  return normalizeParsed(parsed, raw, opts.receivedAt);
}

export function normalizeParsed(parsed: ParsedMail, raw: Buffer, receivedAt: Date): ParsedInbound {
  const fromAddr = addresses(parsed.from)[0];
  // A message with a trailing newline in one MIME layout and not in another is the same text.
  const text = (parsed.text ?? "").replace(/\s+$/, "");
  // mailparser puts the parse time in `date` when the header is unreadable, so the same message
  // parsed twice would get two dates; the header is read here instead, and the receive time used
  // (and said) when it cannot be.
  const warnings: string[] = [];
  const dateHeader = rawHeader(parsed, "date");
  const headerDate = dateHeader === null ? null : parseDateText(dateHeader);
  if (dateHeader !== null && headerDate === null) {
    warnings.push(`email: unreadable Date header ${JSON.stringify(dateHeader.slice(0, 100))}; using the time it was received`);
  }
  const date = headerDate ?? receivedAt;
  const messageId = cleanMessageId(parsed.messageId) ?? generatedMessageId(raw);

  const taken = new Set<string>();
  const attachments: EmailAttachment[] = [];
  const contents: Buffer[] = [];
  parsed.attachments.forEach((a, i) => {
    const filename = uniqueName(sanitizeFilename(a.filename ?? "", `attachment-${i + 1}${extensionFor(a.contentType)}`, { keepLetters: true }), taken);
    attachments.push({ filename, original_filename: a.filename ?? "", content_type: cleanContentType(a.contentType), size: a.content.length, url: null });
    contents.push(a.content);
  });

  return {
    email: {
      from: fromAddr?.address ?? "",
      from_name: fromAddr?.name ?? "",
      to: addresses(parsed.to).map((a) => a.address),
      cc: addresses(parsed.cc).map((a) => a.address),
      reply_to: addresses(parsed.replyTo).map((a) => a.address),
      subject: parsed.subject ?? "",
      text,
      html: typeof parsed.html === "string" ? parsed.html : null,
      date: date.toISOString(),
      date_source: headerDate ? "header" : "received",
      message_id: messageId,
      attachments,
      text_first_line: firstLine(text),
    },
    contents,
    sentByWhenthen: parsed.headers.has(LOOP_HEADER),
    warnings,
  };
}

/** A header's value as sent (unfolded), or null when the message has none. */
function rawHeader(parsed: ParsedMail, name: string): string | null {
  const line = parsed.headerLines?.find((h) => h.key === name)?.line;
  if (line === undefined) return null;
  const colon = line.indexOf(":");
  return line.slice(colon + 1).replace(/\r?\n[ \t]+/g, " ").trim();
}

/**
 * Raw 8-bit bytes in the message's own header block that are not UTF-8 are Latin-1 in practice
 * (windows-1252, as mail clients read them); mailparser would read them as UTF-8 and show U+FFFD.
 * Such a header block is re-encoded as UTF-8 (RFC 6532 headers, which mailparser reads); bodies,
 * which say their charset, are left alone.
 */
export function withUtf8Headers(raw: Buffer): Buffer {
  const end = headerBlockEnd(raw);
  const head = raw.subarray(0, end);
  if (!head.some((b) => b >= 0x80) || isUtf8(head)) return raw;
  return Buffer.concat([Buffer.from(iconv.decode(head, "windows-1252"), "utf8"), raw.subarray(end)]);
}

function headerBlockEnd(raw: Buffer): number {
  const crlf = raw.indexOf("\r\n\r\n");
  const lf = raw.indexOf("\n\n");
  const ends = [crlf, lf].filter((i) => i >= 0);
  return ends.length ? Math.min(...ends) : raw.length;
}

function isUtf8(bytes: Uint8Array): boolean {
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    return true;
  } catch {
    return false;
  }
}

/** Flattens address lists and groups ("undisclosed-recipients:;") into plain addresses. */
function addresses(field: AddressObject | AddressObject[] | undefined): { address: string; name: string }[] {
  if (!field) return [];
  const out: { address: string; name: string }[] = [];
  const walk = (list: EmailAddress[]) => {
    for (const e of list) {
      if (e.group) walk(e.group);
      else if (e.address) out.push({ address: e.address, name: e.name ?? "" });
    }
  };
  for (const obj of Array.isArray(field) ? field : [field]) walk(obj.value);
  return out;
}

/**
 * Keeps the id when it has the `<left@right>` shape; anything else is not worth deduping on. The
 * left part may itself hold `@` (a quoted local part, `<"a@b"@host>`, or the `<a@b@host>` some
 * senders write): the id splits at its last `@`, and both sides must be non-empty.
 */
function cleanMessageId(id: string | undefined): string | null {
  if (!id) return null;
  const s = id.trim();
  if (s.length > 995 || /[\s\0]/.test(s)) return null;
  const core = s.replace(/^<|>$/g, "");
  const at = core.lastIndexOf("@");
  if (/[<>]/.test(core) || at <= 0 || at === core.length - 1 || core.slice(at + 1).includes('"')) return null;
  return `<${core}>`;
}

/** `type/subtype` only, lowercased; a sender's parameters and junk never reach a response header. */
function cleanContentType(type: string | undefined): string {
  const t = (type ?? "").split(";")[0]!.trim().toLowerCase();
  return /^[a-z0-9][a-z0-9!#$&^_.+-]{0,63}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/.test(t) ? t : "application/octet-stream";
}

const EXTENSIONS: Record<string, string> = {
  "application/pdf": ".pdf",
  "image/png": ".png",
  "image/jpeg": ".jpg",
  "image/gif": ".gif",
  "text/plain": ".txt",
  "text/calendar": ".ics",
  "message/rfc822": ".eml",
};
const extensionFor = (type: string | undefined): string => EXTENSIONS[cleanContentType(type)] ?? "";

/** `a.pdf`, `a (2).pdf`, … compared case-insensitively, since the files share one folder. */
function uniqueName(name: string, taken: Set<string>): string {
  let candidate = name;
  const dot = name.lastIndexOf(".");
  const stem = dot > 0 ? name.slice(0, dot) : name;
  const ext = dot > 0 ? name.slice(dot) : "";
  for (let n = 2; taken.has(candidate.toLowerCase()); n++) candidate = `${stem} (${n})${ext}`;
  taken.add(candidate.toLowerCase());
  return candidate;
}

function firstLine(text: string): string {
  const line = text.split(/\r?\n/).find((l) => l.trim() !== "") ?? "";
  const t = line.trim();
  return t.length > MAX_FIRST_LINE ? t.slice(0, MAX_FIRST_LINE) : t;
}
