import type { SearchObject } from "imapflow";
import { z } from "zod";
import { errorMessage } from "../core/errors";
import { field } from "../plugin";

/**
 * The IMAP trigger's config (the editor's fields), what it remembers between checks, its search
 * and its errors in words: pure, no connection (that is lib/triggers/imap.ts).
 */

export const IMAP_DEFAULT_POLL_SECONDS = 60;

const HOST = /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$|^\[?[0-9A-Fa-f:.]+\]?$/;
const DATE = /^\d{4}-\d{2}-\d{2}$/;

/** The editor stores an empty field as ""; it means "no rule". */
const optionalText = (max: number, name: string) =>
  z.preprocess((v) => (typeof v === "string" && v.trim() === "" ? undefined : v), z.string().trim().max(max, `imap: "${name}" is at most ${max} characters`).optional());

export const imapConfigSchema = z
  .strictObject({
    host: field(
      z
        .string()
        .trim()
        .min(1, 'imap: "host" is required (imap.example.com)')
        .max(253)
        .regex(HOST, 'imap: "host" must be a host name such as imap.fastmail.com, without imap:// or a port'),
      { label: "IMAP server", kind: "text", required: true, placeholder: "imap.fastmail.com", help: "imap.gmail.com, imap.fastmail.com, outlook.office365.com… A server on your own network needs ALLOW_PRIVATE_URLS=true." },
    ),
    port: field(z.number().int().min(1).max(65535).default(993), { label: "Port", kind: "number", placeholder: "993", help: "993 for TLS, 143 for STARTTLS." }),
    tls: field(z.enum(["tls", "starttls", "none"], { error: 'imap: "tls" must be tls, starttls or none' }).default("tls"), {
      label: "Security",
      kind: "select",
      options: [
        { value: "tls", label: "TLS (port 993)" },
        { value: "starttls", label: "STARTTLS (port 143)" },
        { value: "none", label: "None (a server on this machine only)" },
      ],
      help: "Certificates are verified. None sends the password in the clear: only for a server on a network you trust.",
    }),
    user: field(z.string().trim().min(1, 'imap: "user" is required').max(320), { label: "User", kind: "text", required: true, placeholder: "me@fastmail.com" }),
    password: field(z.string().min(1, 'imap: "password" is required; store it as a secret: {{secrets.IMAP_PASSWORD}}').max(1000), {
      label: "Password",
      kind: "secret",
      required: true,
      template: true,
      placeholder: "{{secrets.IMAP_PASSWORD}}",
      help: "An app password where the provider has them (Gmail, Fastmail, iCloud). Store it as a secret; it is redacted from every error.",
    }),
    mailbox: field(z.string().trim().min(1).max(500).default("INBOX"), { label: "Mailbox", kind: "text", placeholder: "INBOX", help: "The folder to watch; subfolders as the server names them (INBOX/Invoices, [Gmail]/All Mail)." }),
    // Booleans default to false: the editor starts a checkbox unticked.
    include_read: field(z.boolean().default(false), { label: "Also mail already marked read", kind: "boolean", help: "Off: mail read before whenthen sees it (by a filter, another client) does not fire." }),
    from_contains: field(optionalText(200, "from_contains"), { label: "From contains", kind: "text", placeholder: "@example.com", help: "Optional. Text the sender's name or address contains (the server's search, case-insensitive)." }),
    to_contains: field(optionalText(200, "to_contains"), { label: "To contains", kind: "text", placeholder: "invoices@", help: "Optional. Text a To address contains." }),
    subject_contains: field(optionalText(200, "subject_contains"), { label: "Subject contains", kind: "text", placeholder: "invoice", help: "Optional. Text the subject contains." }),
    since: field(
      z.preprocess(
        (v) => (typeof v === "string" && v.trim() === "" ? undefined : v),
        z
          .string()
          .trim()
          .regex(DATE, 'imap: "since" must be a date such as 2026-03-01')
          .refine((d) => !Number.isNaN(Date.parse(`${d}T00:00:00Z`)), 'imap: "since" is not a real date')
          .optional(),
      ),
      { label: "Received since", kind: "text", placeholder: "2026-03-01", help: "Optional. Only mail the server received on or after this day." },
    ),
    after: field(z.enum(["seen", "move", "leave"], { error: 'imap: "after" must be seen, move or leave' }).default("seen"), {
      label: "After it fires",
      kind: "select",
      options: [
        { value: "seen", label: "Mark it read" },
        { value: "move", label: "Move it to a folder" },
        { value: "leave", label: "Leave it as it is" },
      ],
    }),
    move_to: field(optionalText(500, "move_to"), { label: "Move to folder", kind: "text", placeholder: "Archive", showWhen: { field: "after", equals: ["move"] }, help: "The folder must exist (Test connection checks it)." }),
    poll_only: field(z.boolean().default(false), { label: "Always check on a timer (no IDLE)", kind: "boolean", help: "Off: new mail is pushed at once (IDLE) where the server offers it; on, or on a server without IDLE, the mailbox is checked every few seconds below." }),
    poll_seconds: field(z.number().int().min(10, "at least 10 seconds").max(3600).default(IMAP_DEFAULT_POLL_SECONDS), {
      label: "Check every (seconds), without IDLE",
      kind: "number",
      placeholder: "60",
    }),
  })
  .superRefine((c, ctx) => {
    if (c.after === "move" && !c.move_to) ctx.addIssue({ code: "custom", path: ["move_to"], message: 'imap: "move_to" is required to move the fired mail: the folder to move it to' });
    if (c.after === "move" && c.move_to === c.mailbox) ctx.addIssue({ code: "custom", path: ["move_to"], message: 'imap: "move_to" is the watched mailbox itself; pick another folder' });
  });
export type ImapConfig = z.output<typeof imapConfigSchema>;

/** What the trigger remembers (trigger_state.last_value). */
export interface ImapMemory {
  /** Which mailbox the UIDs are of: another one starts over. */
  mailbox: string;
  uidValidity: string;
  /** The highest UID looked at. */
  lastUid: number;
  /** UIDs fired whose after-action (mark read, move) is not known to be done. */
  owed: number[];
}

export function readMemory(value: unknown, mailbox: string): ImapMemory | null {
  const m = value as Partial<ImapMemory> | null;
  if (!m || typeof m !== "object" || m.mailbox !== mailbox || typeof m.uidValidity !== "string" || typeof m.lastUid !== "number") return null;
  return { mailbox, uidValidity: m.uidValidity, lastUid: m.lastUid, owed: Array.isArray(m.owed) ? m.owed.filter((u): u is number => typeof u === "number") : [] };
}

/** The IMAP search for `config` (and the UID range, when given). Pure. */
export function imapSearch(config: Pick<ImapConfig, "include_read" | "from_contains" | "to_contains" | "subject_contains" | "since">, uids?: string): SearchObject {
  const q: SearchObject = {};
  if (uids) q.uid = uids;
  if (!config.include_read) q.seen = false;
  if (config.from_contains) q.from = config.from_contains;
  if (config.to_contains) q.to = config.to_contains;
  if (config.subject_contains) q.subject = config.subject_contains;
  if (config.since) q.since = new Date(`${config.since}T00:00:00Z`);
  // No criterion: every message (of the range).
  return Object.keys(q).length ? q : { all: true };
}

/**
 * An imapflow error in the user's words with the server's own (its NO/BAD text), naming the
 * server, never the password (the engine redacts the rendered secrets as well).
 */
export function imapErrorMessage(err: unknown, where: string): string {
  const e = err as { code?: string; responseText?: string; authenticationFailed?: boolean; serverResponseCode?: string; message?: string };
  const server = typeof e?.responseText === "string" && e.responseText.trim() ? e.responseText.trim() : null;
  if (e?.authenticationFailed) return `imap: ${where} refused the user name or password${server ? ` (server: "${server}")` : ""}; an account with two-factor sign-in needs an app password`;
  switch (e?.code ?? "") {
    case "ECONNREFUSED":
      return `imap: ${where} refused the connection (nothing listens on that port)`;
    case "ETIMEDOUT":
    case "CONNECT_TIMEOUT":
    case "GREETING_TIMEOUT":
      return `imap: ${where} did not answer in time`;
    case "ENOTFOUND":
      return `imap: ${where}: no such host`;
    case "NoConnection":
    case "EConnectionClosed":
      return `imap: ${where} closed the connection${server ? ` (server: "${server}")` : ""}`;
  }
  if (/certificate|self.signed|CERT_/i.test(`${e?.code ?? ""} ${e?.message ?? ""}`)) return `imap: ${where}: the server's TLS certificate was not accepted (${errorMessage(err)})`;
  return `imap: ${where}: ${server ?? errorMessage(err)}`;
}
