import { z } from "zod";
import type { NormalizedEmail } from "../mail/normalize";
import { field } from "../plugin";
import type { MailTrigger } from "./types";

/**
 * The email trigger: the worker's SMTP receiver (lib/mail/receiver) turns every accepted message
 * into the fields below and creates one event per applet whose rules all match
 * (dedupe_key = message_id). Routing is `matchesEmail`, pure.
 */

export const SUBJECT_REGEX_MAX_LENGTH = 200;
/** Subjects longer than this are cut before matching: a bound on the regex's work. */
const SUBJECT_MATCH_MAX_LENGTH = 1000;

/** The editor stores an empty field as ""; it means "no rule". */
const optionalText = <T extends z.ZodType>(schema: T) =>
  z.preprocess((v) => (typeof v === "string" && v.trim() === "" ? undefined : v), schema.optional());

/**
 * A quantified group that itself contains a quantifier — `(a+)+`, `(\w*\s?)*`, `(x+){2,}` — is the
 * shape behind catastrophic backtracking. Refusing it (and capping pattern and subject length)
 * keeps one hostile subject from stalling the receiver; a pattern never needs that shape to
 * match a subject line.
 */
const NESTED_QUANTIFIER = /\((?:[^()\\]|\\.)*(?:[+*]|\{\d+,?\d*\})(?:[^()\\]|\\.)*\)(?:[+*]|\{\d+,?\d*\})/;
/** Back-references are not needed for subject rules and can be exponential too. */
const BACK_REFERENCE = /\\[1-9]|\\k</;

export function subjectRegexProblem(pattern: string): string | null {
  if (pattern.length > SUBJECT_REGEX_MAX_LENGTH) return `email: "subject_regex" is longer than ${SUBJECT_REGEX_MAX_LENGTH} characters`;
  try {
    new RegExp(pattern, "i");
  } catch (err) {
    return `email: "subject_regex" does not compile: ${(err as Error).message}`;
  }
  if (NESTED_QUANTIFIER.test(pattern)) return 'email: "subject_regex" has a quantified group containing a quantifier (like (a+)+), which can take exponential time; simplify it';
  if (BACK_REFERENCE.test(pattern)) return 'email: "subject_regex" uses a back-reference, which is not allowed';
  return null;
}

export const emailConfigSchema = z.strictObject({
  /** Local part of the inbound address: `invoices` for invoices@INBOUND_DOMAIN. */
  to_alias: field(
    optionalText(
      z
        .string()
        .trim()
        .toLowerCase()
        .max(64, 'email: "to_alias" is at most 64 characters')
        .regex(/^[a-z0-9](?:[a-z0-9._+=-]*[a-z0-9_+=-])?$/, 'email: "to_alias" may use only letters, digits and . _ + = - (the part before @)'),
    ),
    { label: "To alias", kind: "text", preview: "inboundAddress", placeholder: "invoices", help: "Optional. The part before @: mail delivered to invoices@<INBOUND_DOMAIN> (or invoices+anything@) fires this applet. Empty: any address at the inbound domain." },
  ),
  from_contains: field(optionalText(z.string().trim().max(200, 'email: "from_contains" is at most 200 characters')), {
    label: "From contains",
    kind: "text",
    placeholder: "@example.com",
    help: "Optional. Case-insensitive text the sender's name or address must contain.",
  }),
  subject_regex: field(
    optionalText(
      z.string().superRefine((v, ctx) => {
        const problem = subjectRegexProblem(v);
        if (problem) ctx.addIssue({ code: "custom", message: problem });
      }),
    ),
    { label: "Subject matches", kind: "text", placeholder: "^Invoice ", help: "Optional. A case-insensitive regular expression searched in the subject (at most 200 characters, no nested quantifiers like (a+)+)." },
  ),
});
export type EmailConfig = z.output<typeof emailConfigSchema>;

const localPart = (address: string): string => {
  const at = address.lastIndexOf("@");
  return (at < 0 ? address : address.slice(0, at)).toLowerCase();
};

/**
 * Whether one message belongs to one applet. Every rule that is set must match; no rules match
 * everything.
 * - `to_alias` matches the part before `@` of a recipient: the SMTP envelope recipients when there
 *   are any (always, for mail through the receiver), else the `To` addresses (a sample or a test
 *   event). The envelope is where the mail was actually delivered: it is the only place a Bcc, a
 *   forwarding rule or a mailing list names our alias, and a message sent to nobody@ whose `To`
 *   header says invoices@ must not fire the invoices applet. One message delivered to several
 *   aliases fires each (and a relay splitting it per recipient is deduped by message_id).
 *   Case-insensitive; `alias+tag@` matches `alias` (sub-addressing) unless the alias has a `+`.
 * - `from_contains`: case-insensitive substring of `Name <address>` of the sender.
 * - `subject_regex`: case-insensitive JavaScript regex, searched anywhere in the subject.
 */
export function matchesEmail(config: EmailConfig, email: Pick<NormalizedEmail, "to" | "from" | "from_name" | "subject">, envelopeRcpts: string[]): boolean {
  if (config.to_alias) {
    const alias = config.to_alias.toLowerCase();
    const plus = !alias.includes("+");
    const recipients = envelopeRcpts.length > 0 ? envelopeRcpts : email.to;
    const hit = recipients.some((addr) => {
      const local = localPart(addr);
      return local === alias || (plus && local.startsWith(`${alias}+`));
    });
    if (!hit) return false;
  }
  if (config.from_contains) {
    const sender = `${email.from_name} <${email.from}>`.toLowerCase();
    if (!sender.includes(config.from_contains.toLowerCase())) return false;
  }
  if (config.subject_regex) {
    // A stored pattern was checked on save; one that no longer compiles matches nothing.
    if (subjectRegexProblem(config.subject_regex)) return false;
    if (!new RegExp(config.subject_regex, "i").test(email.subject.slice(0, SUBJECT_MATCH_MAX_LENGTH))) return false;
  }
  return true;
}

const sample: NormalizedEmail = {
  from: "ada@example.com",
  from_name: "Ada Lovelace",
  to: ["invoices@hooks.example"],
  cc: ["bob@example.org"],
  reply_to: [],
  subject: "Invoice INV-2026-0042 is ready",
  text: "Hi,\n\nYour invoice INV-2026-0042 for March is ready.\nAmount due: EUR 59.90, payable by 2026-04-15.\n\nThanks,\nAda",
  html: "<p>Hi,</p><p>Your invoice <b>INV-2026-0042</b> for March is ready.</p>",
  date: "2026-03-10T08:16:30.000Z",
  date_source: "header",
  message_id: "<CAF3x9qWz1-attach-2026@mail.example.com>",
  attachments: [
    {
      filename: "INV-2026-0042.pdf",
      original_filename: "INV-2026-0042.pdf",
      content_type: "application/pdf",
      size: 596,
      url: "http://localhost:3000/api/files/events/6f1c2d9e-0b7a-4c1e-9a51-2f0f1c7d3b21/INV-2026-0042.pdf?exp=1773216990&sig=sample",
    },
  ],
  text_first_line: "Hi,",
};

export const emailTrigger: MailTrigger<EmailConfig, "email"> = {
  type: "email",
  feed: "mail",
  label: "Email",
  description: "Mail sent to an address at your inbound domain (INBOUND_DOMAIN). Sender, subject, body and attachments become ingredients.",
  configSchema: emailConfigSchema,
  exampleConfig: { to_alias: "invoices", from_contains: "@example.com", subject_regex: "^Invoice " },
  ingredients: [
    { name: "from", description: "Sender address" },
    { name: "from_name", description: "Sender display name" },
    { name: "to", description: "To addresses (array)" },
    { name: "cc", description: "Cc addresses (array)" },
    { name: "reply_to", description: "Reply-To addresses (array); used only where you put it" },
    { name: "subject", description: "Subject line" },
    { name: "text", description: "Plain-text body" },
    { name: "html", description: "HTML body (null when the message has none)" },
    { name: "date", description: "Date header as ISO UTC; the time it was received when the header is missing or unreadable" },
    { name: "date_source", description: '"header", or "received" when date is the receive time' },
    { name: "message_id", description: "Message-ID (generated from the message when missing)" },
    { name: "attachments", description: "Array of { filename, original_filename, content_type, size, url }: filename is the stored name (made safe for a file system, letters of every script kept), original_filename the name as sent; url is a 24 h signed link, null when too large to keep" },
    { name: "text_first_line", description: "First non-blank line of the body" },
  ],
  sample: { ...sample },
  match: (config, message) => matchesEmail(config, message.email, message.envelopeRcpts),
};

export default emailTrigger;
