import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { domainToASCII } from "node:url";
import { Marked } from "marked";
import type { Transporter } from "nodemailer";
import type Mail from "nodemailer/lib/mailer";
import type SMTPTransport from "nodemailer/lib/smtp-transport";
import type StreamTransport from "nodemailer/lib/stream-transport";
import addressparser from "nodemailer/lib/addressparser";
import { z } from "zod";
import { field } from "../plugin";
import { ActionError, errorMessage } from "../core/errors";
import { LOOP_HEADER } from "../mail/headers";
import { hasTemplate, quote, requireRendered, requiredText } from "./common";
import type { ActionContext, ActionPlugin } from "./types";

/**
 * Sends an email from EMAIL_FROM. With SMTP_URL, through that relay; without it, the exact message
 * is written to DATA_DIR/outbox/<timestamp>-<id>.eml so development never sends real mail.
 * The Message-ID comes from the event id and action index, so a retry through a relay that
 * dedupes on it is not delivered twice. Only the rendered `to` receives anything: an inbound
 * message's Reply-To is used only when a template puts `{{reply_to}}` there.
 */

export const MAX_RECIPIENTS = 50;
const MAX_SUBJECT = 998;
/** Timeouts in the range the design gives outside calls (15–20 s). */
const SMTP_TIMEOUTS = { connectionTimeout: 15_000, greetingTimeout: 15_000, socketTimeout: 20_000 } as const;

const LINE_BREAK = /[\r\n\u2028\u2029\u0085]/;
/** C0 controls other than tab, and DEL: never meaningful in a header. */
const hasControl = (s: string): boolean => [...s].some((c) => {
  const code = c.charCodeAt(0);
  return (code < 0x20 && code !== 0x09) || code === 0x7f;
});

/** dot-atom local part (RFC 5322) at a DNS name; quoted local parts and IP literals are not supported. */
const LOCAL_PART = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/;
const DOMAIN = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/;

export function isValidAddress(address: string): boolean {
  const at = address.lastIndexOf("@");
  if (at <= 0 || address.length > 254) return false;
  const local = address.slice(0, at);
  const domain = domainToASCII(address.slice(at + 1).toLowerCase());
  return local.length <= 64 && LOCAL_PART.test(local) && DOMAIN.test(domain);
}

/**
 * `a@x.com, "Doe, Jane" <jane@y.org>` → mailboxes. Refuses line breaks (header injection), groups,
 * invalid addresses and more than 50 recipients, each with a message naming the bad value.
 */
export function parseRecipients(value: string): { ok: true; recipients: { name: string; address: string }[] } | { ok: false; problem: string } {
  if (LINE_BREAK.test(value) || hasControl(value)) return { ok: false, problem: 'email: "to" contains a line break or control character' };
  const entries = addressparser(value);
  const recipients: { name: string; address: string }[] = [];
  // addressparser strips quotes and backslashes: its form of an entry is shown only when it is
  // what was written, so no rewritten copy of a secret in "to" can slip past the redaction.
  const shown = (text: string, n: number, max: number) => (text !== "" && value.includes(text) ? quote(text, max) : `(entry ${n} of ${entries.length})`);
  for (const [i, e] of entries.entries()) {
    if (e.group !== undefined) return { ok: false, problem: `email: "to" contains a group ${shown(e.name, i + 1, 40)}; list the addresses instead` };
    if (!isValidAddress(e.address)) return { ok: false, problem: `email: "to" has an invalid address ${shown(e.address || e.name, i + 1, 80)}` };
    recipients.push({ name: e.name, address: e.address });
  }
  if (recipients.length === 0) return { ok: false, problem: 'email: "to" has no address' };
  if (recipients.length > MAX_RECIPIENTS) return { ok: false, problem: `email: "to" has ${recipients.length} addresses; at most ${MAX_RECIPIENTS}` };
  return { ok: true, recipients };
}

export const emailActionConfigSchema = z.strictObject({
  to: field(requiredText("email", "to").superRefine((v, ctx) => {
    // A template is checked once rendered.
    if (hasTemplate(v)) return;
    const r = parseRecipients(v);
    if (!r.ok) ctx.addIssue({ code: "custom", message: r.problem });
  }), { label: "To", kind: "text", required: true, template: true, placeholder: "me@example.com", help: `Comma-separated addresses, at most ${MAX_RECIPIENTS}.` }),
  subject: field(requiredText("email", "subject").refine((v) => !LINE_BREAK.test(v), { error: 'email: "subject" contains a line break' }), { label: "Subject", kind: "text", required: true, template: true }),
  body_markdown: field(z.string().max(200_000, 'email: "body_markdown" is longer than 200,000 characters').default(""), { label: "Body (Markdown)", kind: "textarea", template: true, help: "Sent as HTML and as plain text. Raw HTML is shown as text." }),
});
export type EmailActionConfig = z.output<typeof emailActionConfigSchema>;

/**
 * Markdown → HTML with raw HTML shown as text: ingredient values (a stranger's email, a webhook
 * body) end up in the body, and must not become markup or tracking images in the sent mail.
 */
const markdown = new Marked({
  gfm: true,
  breaks: true,
  async: false,
  renderer: {
    html: ({ text }) => escapeHtml(text),
  },
});

const escapeHtml = (s: string): string =>
  s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] ?? c);

export function renderMarkdown(body: string): string {
  return markdown.parse(body, { async: false });
}

/** `<event_id.index@domain>` (`<event_id.index.run_id@domain>` for a replay): the same for every attempt of one step. */
export function messageIdFor(idempotencyKey: string, emailFrom: string): string {
  const left = idempotencyKey.replace(/[^A-Za-z0-9.-]+/g, ".").replace(/^\.+|\.+$/g, "") || "whenthen";
  const fromAddress = addressparser(emailFrom, { flatten: true })[0]?.address ?? "";
  const domain = domainToASCII(fromAddress.slice(fromAddress.lastIndexOf("@") + 1).toLowerCase());
  return `<${left}@${domain && DOMAIN.test(domain) ? domain : "whenthen.localhost"}>`;
}

/**
 * SMTP replies worth retrying: exactly the spec's 421, 450, 451 and 452. Other 4xx replies (454
 * TLS not available, 455 parameters refused, 471 policy) are nominally transient but come back the
 * same from a relay that is configured that way, so the run fails instead of retrying for hours.
 */
const RETRYABLE_REPLIES = new Set([421, 450, 451, 452]);
/** Network failures (nodemailer's and the system's codes): retryable. */
const RETRYABLE_CODES = new Set(["ECONNECTION", "ETIMEDOUT", "ESOCKET", "EDNS", "ETLS", "EPROTOCOL", "EPROXY", "ECONNREFUSED", "ECONNRESET", "EPIPE", "EHOSTUNREACH", "ENETUNREACH", "EAI_AGAIN", "ENOTFOUND"]);

export function classifySendError(err: unknown): ActionError {
  const e = err as { responseCode?: unknown; code?: unknown; response?: unknown };
  const code = typeof e.responseCode === "number" ? e.responseCode : undefined;
  const reply = typeof e.response === "string" ? e.response.slice(0, 300) : undefined;
  if (code !== undefined) {
    const retryable = RETRYABLE_REPLIES.has(code);
    return new ActionError(`email: the SMTP relay answered ${reply ?? code}`, { retryable, cause: err, output: { smtp_code: code, response: reply ?? null } });
  }
  const errCode = typeof e.code === "string" ? e.code : "";
  const retryable = RETRYABLE_CODES.has(errCode);
  return new ActionError(`email: sending failed${errCode ? ` (${errCode})` : ""}: ${errorMessage(err)}`, { retryable, cause: err });
}

/** Compact UTC stamp that sorts and is a valid file name everywhere (no `:`). */
const fileStamp = (d: Date): string => d.toISOString().replace(/[-:]/g, "").replace(".", "");

export const emailAction: ActionPlugin<EmailActionConfig> = {
  type: "email",
  label: "Send email",
  description: "Send an email from EMAIL_FROM through SMTP_URL (or to the local outbox when it is unset).",
  configSchema: emailActionConfigSchema,
  alert: {
    label: "Email",
    help: "Without SMTP_URL the message goes to the outbox (see Outbound mail).",
    messageFields: ["subject", "body_markdown"],
    // One paragraph per line of the alert: Markdown would join them.
    fill: (msg) => ({ subject: msg.title, body_markdown: msg.text.split("\n").join("\n\n") }),
  },
  exampleConfig: { to: "me@example.com", subject: "New order: {{trigger.body.title}}", body_markdown: "**{{trigger.body.customer.name}}** paid." },

  async run(config, ctx) {
    const message = buildMessage(config, ctx);
    if (ctx.config.smtpUrl) return sendViaRelay(ctx, ctx.config.smtpUrl, message);
    return writeToOutbox(ctx, message);
  },

  // The message is built and rendered to its exact bytes in memory (the outbox transport's own
  // rendering); nothing connects to the relay and no .eml is written.
  async dryRun(config, ctx) {
    const message = buildMessage(config, ctx);
    const transport = await streamTransport({ streamTransport: true, buffer: true, newline: "crlf", disableFileAccess: true, disableUrlAccess: true });
    const info = await transport.sendMail(message);
    const eml = Buffer.isBuffer(info.message) ? info.message.toString("utf8") : "";
    const to = message.to.map((r) => r.address);
    const via = ctx.config.smtpUrl ? "smtp" : "outbox";
    return {
      kind: "email",
      summary: `would ${via === "smtp" ? "send" : "write to the outbox"} "${message.subject}" to ${to.join(", ")}`,
      via,
      ...(via === "outbox" ? { outbox_folder: path.join(ctx.config.dataDir, "outbox") } : {}),
      from: ctx.config.emailFrom,
      to,
      subject: message.subject,
      message_id: message.messageId,
      headers: message.headers,
      text: message.text,
      html: message.html,
      eml,
    };
  },
};

/** The message `run` sends and `dryRun` shows: the same checks, the same headers. */
function buildMessage(config: EmailActionConfig, ctx: ActionContext): Message {
  const rendered = parseRecipients(requireRendered("email", "to", config.to));
  if (!rendered.ok) throw new ActionError(rendered.problem, { retryable: false });
  const subject = requireRendered("email", "subject", config.subject).trim();
  if (LINE_BREAK.test(subject) || hasControl(subject)) throw new ActionError('email: "subject" contains a line break or control character', { retryable: false });
  if (subject.length > MAX_SUBJECT) throw new ActionError(`email: "subject" is longer than ${MAX_SUBJECT} characters`, { retryable: false });
  const body = config.body_markdown ?? "";
  const messageId = messageIdFor(ctx.idempotencyKey, ctx.config.emailFrom);
  const to = rendered.recipients;

  return {
    from: ctx.config.emailFrom,
    to,
    subject,
    text: body,
    html: renderMarkdown(body),
    messageId,
    date: ctx.clock.now(),
    headers: {
      // RFC 3834: vacation responders and other robots must not answer an automated message.
      "Auto-Submitted": "auto-generated",
      // Lets the inbound receiver recognise its own mail coming back (loop guard).
      [LOOP_HEADER]: ctx.run.eventId.replace(/[^A-Za-z0-9-]/g, ""),
    },
    // Belt and braces with the transport options: nothing in a message may read files or URLs.
    disableFileAccess: true,
    disableUrlAccess: true,
  };
}

/** nodemailer costs ~15 MB of RSS: a worker loads it with its first email action. Typed per
 * transport, so what sendMail answers is typed too. */
const nodemailer = async () => (await import("nodemailer")).default;
const smtpTransport = async (options: SMTPTransport.Options): Promise<Transporter<SMTPTransport.SentMessageInfo>> => (await nodemailer()).createTransport(options);
const streamTransport = async (options: StreamTransport.Options): Promise<Transporter<StreamTransport.SentMessageInfo>> => (await nodemailer()).createTransport(options);

type Message = Mail.Options & {
  to: { name: string; address: string }[];
  subject: string;
  messageId: string;
};

async function sendViaRelay(ctx: ActionContext, smtpUrl: string, message: Message) {
  if (!/^smtps?:\/\//i.test(smtpUrl)) throw new ActionError("email: SMTP_URL must start with smtp:// or smtps://", { retryable: false });
  const transport = await smtpTransport({ url: smtpUrl, ...SMTP_TIMEOUTS, disableFileAccess: true, disableUrlAccess: true });
  try {
    const info = await transport.sendMail(message);
    ctx.log.info("email sent", { to: message.to.map((r) => r.address), subject: message.subject, message_id: message.messageId });
    return {
      output: { via: "smtp", message_id: message.messageId, accepted: info.accepted.map(String), rejected: info.rejected.map(String), response: info.response },
    };
  } catch (err) {
    throw classifySendError(err);
  } finally {
    transport.close();
  }
}

async function writeToOutbox(ctx: ActionContext, message: Message) {
  const transport = await streamTransport({ streamTransport: true, buffer: true, newline: "crlf", disableFileAccess: true, disableUrlAccess: true });
  const info = await transport.sendMail(message);
  const eml = info.message;
  if (!Buffer.isBuffer(eml)) throw new ActionError("email: the outbox transport did not return the message", { retryable: false });
  const dir = path.join(ctx.config.dataDir, "outbox");
  await mkdir(dir, { recursive: true });
  const id = ctx.idempotencyKey.replace(/[^A-Za-z0-9.-]+/g, ".").replace(/^\.+|\.+$/g, "") || "message";
  const base = `${fileStamp(ctx.clock.now())}-${id}`;
  let file = path.join(dir, `${base}.eml`);
  // `wx` never overwrites: two writes in the same millisecond (a retry) both stay visible.
  for (let n = 2; ; n++) {
    try {
      await writeFile(file, eml, { flag: "wx" });
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST" || n > 100) throw new ActionError(`email: could not write ${file}: ${errorMessage(err)}`, { retryable: true, cause: err });
      file = path.join(dir, `${base}-${n}.eml`);
    }
  }
  ctx.log.info("email written to outbox (SMTP_URL is not set)", { to: message.to.map((r) => r.address), subject: message.subject, path: file });
  return { output: { via: "outbox", path: file, message_id: message.messageId, to: message.to.map((r) => r.address), subject: message.subject } };
}

export default emailAction;
