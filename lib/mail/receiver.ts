import { newId } from "../core/ids";
import type { AddressInfo } from "node:net";
import { domainToASCII } from "node:url";
import type { SMTPServerAddress, SMTPServerDataStream, SMTPServerSession } from "smtp-server";
import type { App } from "../app";
import { UserError, errorMessage } from "../core/errors";
import { Lru } from "../core/lru";
import { checkDefinition, maxAttemptsOf, storedDefinition } from "../definition";
import { copyEventFiles, deleteEventFiles, saveEventFiles, selectStorable } from "../files/events";
import { signedFileUrl } from "../files/signed-url";
import type { Ingested } from "../db/store";
import { disabledOutcome, minuteBucket } from "../fires/counter";
import { processMetrics } from "../metrics";
import { ingest } from "../queue/ingest";
import type { Applet } from "../db/store";
import { MAIL_TRIGGERS, triggerRegistry, type RegisteredMail } from "../triggers";
import { MAIL_MAX_BYTES, parseInbound, type NormalizedEmail } from "./normalize";

/**
 * The worker's inbound SMTP receiver (spec Triggers §4). It accepts mail only for INBOUND_DOMAIN,
 * so the box is never a relay, turns each message into one event per matching email applet, and
 * answers 250 to a message no applet wants (a reject at DATA would bounce to the sender).
 */

export const MAX_MESSAGE_BYTES = MAIL_MAX_BYTES;
export const MAX_CLIENTS = 10;
export const SOCKET_TIMEOUT_MS = 30_000;
export const MAX_RECIPIENTS = 100;
/** On close, a message still being received after this long is cut (the sender retries later). */
export const CLOSE_TIMEOUT_MS = 30_000;
/** RFC 5321 §4.5.3.1.1. */
const MAX_LOCAL_PART = 64;
/**
 * Local parts are plain aliases. `%` and `!` (old relay syntaxes: `victim%gmail.com@us`,
 * `gmail.com!victim@us`), quotes, `@` and `:` (source routes) are refused outright, so no
 * downstream program can read a recipient as an address somewhere else.
 */
const LOCAL_PART = /^[A-Za-z0-9](?:[A-Za-z0-9._+=-]*[A-Za-z0-9_+=-])?$/;

export interface ReceiverOptions {
  /** Default SMTP_INBOUND_PORT; 0 picks a free port (tests). */
  port?: number;
  /** Default HOST (0.0.0.0). */
  host?: string;
  /** Default 25 MB; lower in tests. */
  maxBytes?: number;
  /** Default 30 s. */
  closeTimeoutMs?: number;
}

export interface Receiver {
  port: number;
  /** Whether the socket still accepts connections (the heartbeat reports it; the banner says when it does not). */
  listening(): boolean;
  /** Stops accepting, lets in-flight messages finish (up to the close timeout), then ends every connection. */
  close(): Promise<void>;
}

interface SmtpError extends Error {
  responseCode: number;
}

const smtpError = (responseCode: number, message: string): SmtpError => Object.assign(new Error(message), { responseCode });

export async function startReceiver(app: App, opts: ReceiverOptions = {}): Promise<Receiver> {
  const smtpCount = processMetrics().smtpMessages;
  const log = app.log.child("smtp");
  const maxBytes = opts.maxBytes ?? MAX_MESSAGE_BYTES;
  const inboundDomain = asciiDomain(app.config.inboundDomain);
  if (!inboundDomain) throw new Error(`smtp: INBOUND_DOMAIN ${JSON.stringify(app.config.inboundDomain)} is not a valid domain`);

  let inFlight = 0;
  let idle: (() => void) | null = null;

  // Imported here so a process that never starts the receiver never loads smtp-server.
  const { SMTPServer } = await import("smtp-server");
  const server = new SMTPServer({
    name: inboundDomain,
    banner: "whenthen inbound",
    // No AUTH and no STARTTLS in v1: the receiver only takes mail for its own domain.
    authOptional: true,
    disabledCommands: ["AUTH", "STARTTLS"],
    size: maxBytes,
    maxClients: MAX_CLIENTS,
    socketTimeout: SOCKET_TIMEOUT_MS,
    closeTimeout: opts.closeTimeoutMs ?? CLOSE_TIMEOUT_MS,
    // RFC 5321 §4.5.3.1.10: more recipients than the limit get 452, and the sender delivers them in a later transaction.
    maxRecipients: MAX_RECIPIENTS,
    // A reverse lookup per connection adds latency and a DNS dependency for nothing we use.
    disableReverseLookup: true,
    logger: false,

    onRcptTo(address: SMTPServerAddress, session: SMTPServerSession, callback: (err?: Error | null) => void) {
      const problem = recipientProblem(address.address, inboundDomain);
      if (problem) {
        log.info("recipient refused", { rcpt: address.address.slice(0, 320), reason: problem, remote: session.remoteAddress });
        smtpCount.inc({ outcome: "recipient_rejected" });
        return callback(smtpError(550, `5.1.1 <${printable(address.address)}>: recipient rejected: ${problem}`));
      }
      callback();
    },

    onData(stream: SMTPServerDataStream, session: SMTPServerSession, callback: (err?: Error | null, message?: string) => void) {
      inFlight++;
      const done = (err: Error | null, message?: string) => {
        inFlight--;
        // Reply first: a shutdown waiting on this message then ends the connection after the 250.
        callback(err, message);
        if (inFlight === 0 && idle) idle();
      };
      const chunks: Buffer[] = [];
      let bytes = 0;
      let oversized = false;
      // Counted on the stream itself, not only advertised with SIZE: a client may ignore SIZE.
      stream.on("data", (chunk: Buffer) => {
        bytes += chunk.length;
        if (bytes > maxBytes) {
          oversized = true;
          chunks.length = 0;
        } else if (!oversized) chunks.push(chunk);
      });
      stream.on("error", (err) => {
        log.warn("message stream failed", { err, session: session.id });
        smtpCount.inc({ outcome: "failed" });
        done(smtpError(451, "4.3.0 Error reading the message, try again later"));
      });
      stream.on("end", () => {
        if (oversized || stream.sizeExceeded) {
          log.info("message refused: too large", { bytes, max: maxBytes, session: session.id });
          smtpCount.inc({ outcome: "too_large" });
          return done(smtpError(552, `5.3.4 Message exceeds the fixed maximum message size of ${maxBytes} bytes`));
        }
        const rcpts = session.envelope.rcptTo.map((r) => r.address);
        deliver(app, Buffer.concat(chunks), rcpts).then(
          (summary) => {
            smtpCount.inc({ outcome: "accepted" });
            done(null, `2.0.0 Message accepted${summary}`);
          },
          (err: unknown) => {
            if (err instanceof UnacceptableMessage) {
              // The same bytes will fail the same way every time: a 4xx would make the sender
              // retry for days. A permanent reply bounces it with the reason instead.
              log.info("message refused: cannot be parsed", { reason: err.message, session: session.id });
              smtpCount.inc({ outcome: "unparseable" });
              return done(smtpError(err.responseCode, `${err.enhancedCode} ${err.message}`));
            }
            log.error("message processing failed", { err: errorMessage(err), session: session.id });
            smtpCount.inc({ outcome: "failed" });
            // Our failure (disk, database), not the sender's: a temporary error makes them retry.
            done(smtpError(451, "4.3.0 Temporary failure processing the message, try again later"));
          },
        );
      });
    },
  });
  server.on("error", (err) => log.error("smtp server error", { err }));

  const host = opts.host ?? app.config.host;
  const port = opts.port ?? app.config.smtpInboundPort;
  await new Promise<void>((resolve, reject) => {
    const onError = (err: Error) => reject(err);
    server.server.once("error", onError);
    server.listen(port, host, () => {
      server.server.off("error", onError);
      resolve();
    });
  });
  const bound = (server.server.address() as AddressInfo).port;
  log.info("listening", { port: bound, host, domain: inboundDomain });

  let closing: Promise<void> | null = null;
  return {
    port: bound,
    listening: () => server.server.listening && closing === null,
    close: () =>
      (closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        // smtp-server waits for every connection, idle ones too; end the idle ones as soon as no
        // message is in flight so shutdown is not held up by a client sitting between messages.
        const endAll = () => {
          for (const c of server.connections) {
            c.send(421, `${inboundDomain} Service shutting down`);
            c.close();
          }
        };
        if (inFlight === 0) endAll();
        else idle = endAll;
      })),
  };
}

/** Lowercase ASCII (punycode) form of a domain; "" when it is not a domain name. */
function asciiDomain(domain: string): string {
  const d = domain.trim().replace(/\.$/, "").toLowerCase();
  if (!d || d.startsWith("[")) return "";
  return domainToASCII(d);
}

/** Why a RCPT TO address is refused, or null to accept it. */
export function recipientProblem(address: string, inboundDomain: string): string | null {
  const at = address.lastIndexOf("@");
  if (at <= 0) return "not an address at this domain";
  const local = address.slice(0, at);
  const domain = asciiDomain(address.slice(at + 1));
  if (!domain || domain !== inboundDomain) return "relay access denied";
  if (local.length > MAX_LOCAL_PART) return `local part longer than ${MAX_LOCAL_PART} characters`;
  if (!LOCAL_PART.test(local) || local.includes("..")) return "unsupported characters in the local part";
  return null;
}

/**
 * A message the parser refuses: its bytes will never parse, so the answer is permanent. 552 for
 * the parser's size limits (RFC 5321: exceeded storage allocation), 554 for anything else in the
 * content. Only our own faults (disk, database) stay temporary.
 */
export class UnacceptableMessage extends UserError {
  override name = "UnacceptableMessage";
  constructor(
    message: string,
    readonly responseCode: 552 | 554,
    readonly enhancedCode: string,
    cause: unknown,
  ) {
    super(message, undefined, { cause });
  }
}

/** mailparser's limits (its MIME splitter's EMAXLEN errors), in words a sender's bounce can show. */
const PARSER_LIMITS: [RegExp, string][] = [
  [/header size/i, "Message refused: a header block is larger than 1 MB (too many or too long headers)"],
  [/child nodes/i, "Message refused: more than 1000 MIME parts (attachments)"],
];

function unacceptable(err: unknown): UnacceptableMessage {
  // One reply line: nothing from the parser may break the SMTP framing.
  const message = errorMessage(err).replace(/[^\x20-\x7e]+/g, " ");
  if ((err as { code?: unknown }).code === "EMAXLEN") {
    const words = PARSER_LIMITS.find(([re]) => re.test(message))?.[1] ?? `Message refused: ${message}`;
    return new UnacceptableMessage(words, 552, "5.3.4", err);
  }
  return new UnacceptableMessage(`Message refused: it cannot be parsed (${message.slice(0, 200)})`, 554, "5.6.0", err);
}

const printable = (s: string): string => s.replace(/[^\x21-\x7e]/g, "?").slice(0, 320);

/**
 * Routes one accepted message: one event per matching applet, attachments stored per event.
 * Returns a note for the 250 reply. Throws only on our own failures (disk, database).
 */
export async function deliver(app: App, raw: Buffer, envelopeRcpts: string[]): Promise<string> {
  const log = app.log.child("smtp");
  const receivedAt = app.clock.now();
  let parsed: Awaited<ReturnType<typeof parseInbound>>;
  try {
    parsed = await parseInbound(raw, { receivedAt });
  } catch (err) {
    throw unacceptable(err);
  }
  const { email, contents, sentByWhenthen, warnings } = parsed;
  const context = { message_id: email.message_id, from: email.from, rcpt: envelopeRcpts, subject: email.subject.slice(0, 200) };
  for (const warning of warnings) log.warn(warning, context);

  if (sentByWhenthen) {
    // Something this install sent came back (an email action addressed to an inbound alias):
    // firing again could loop forever.
    log.warn("message ignored: sent by an email action of this install (mail loop guard)", context);
    return "";
  }

  const routes = mailRoutes(app);
  // Disabled applets are matched too: a message to one runs nothing, but the fire ledger says it
  // came (as a request to a disabled webhook applet does).
  const addressed = (await Promise.all(MAIL_TRIGGERS.map((type) => app.store.applets.listByTriggerType(type, { includeDisabled: true })))).flat().flatMap((applet) => {
    const route = routes.get(applet, log);
    if (!route) return [];
    return route.plugin.match(route.config, { email, envelopeRcpts }) ? [{ applet, triggerType: route.plugin.type, maxAttempts: route.maxAttempts }] : [];
  });
  const matched = addressed.filter((m) => m.applet.enabled);
  const disabled = addressed.filter((m) => !m.applet.enabled);
  for (const { applet } of disabled) {
    log.info("message for a disabled applet; nothing ran", { ...context, applet_id: applet.id });
    // Counted per applet, reason and minute like webhooks (a flood adds to one row); written now:
    // the message was parsed already, one more write is not what it costs.
    const { outcome, detail } = disabledOutcome(applet.pausedReason, "the applet is disabled; the message was accepted (250) and nothing ran");
    await app.store.fires.count({ appletId: applet.id, outcome, detail, ...minuteBucket(outcome, detail, receivedAt), count: 1 }, receivedAt.toISOString());
  }

  if (matched.length === 0) {
    if (disabled.length > 0) return " (applet disabled)";
    log.info("message matched no applet; accepted and dropped", context);
    return "";
  }

  const keep = selectStorable(contents.map((c) => c.length));
  const storable = email.attachments.flatMap((a, i) => (keep[i] ? [{ filename: a.filename, contentType: a.content_type, content: contents[i]! }] : []));
  // The first event's files are the source the others copy from; files of events that were not
  // created (duplicates, failures) are removed at the end, once no copy needs them.
  let source: string | null = null;
  const discard: string[] = [];
  let queued = 0;
  try {
    for (const { applet, triggerType, maxAttempts } of matched) {
      const eventId = newId();
      if (storable.length > 0) {
        if (source) await copyEventFiles(app.store, source, eventId, receivedAt);
        else await saveEventFiles(app.store, eventId, storable, receivedAt);
        source ??= eventId;
      }
      const payload: NormalizedEmail = {
        ...email,
        attachments: email.attachments.map((a, i) => ({ ...a, url: keep[i] ? signedFileUrl(app.config, eventId, a.filename, receivedAt) : null })),
      };
      let result: Ingested = null;
      try {
        result = await ingest(app, {
          appletId: applet.id,
          source: triggerType,
          dedupeKey: email.message_id,
          payload: { ...payload },
          maxAttempts,
          eventId,
          receivedAt: receivedAt.toISOString(),
          definition: storedDefinition(applet.definition),
        });
      } finally {
        if (!result && storable.length > 0) discard.push(eventId);
      }
      if (!result) {
        // The same message again (a sender retrying after a lost 250): the first delivery's event
        // stands, and the fire ledger says which run it was (a retry is rare: written now).
        log.info("duplicate message for applet ignored", { ...context, applet_id: applet.id });
        const first = await app.store.runs.firstOfDedupeKey(applet.id, email.message_id);
        const at = receivedAt.toISOString();
        await app.store.fires.record(
          [{ appletId: applet.id, at, outcome: "deduplicated", dedupeKey: email.message_id, runId: first?.runId ?? null, detail: `the message ${email.message_id} was already delivered${first?.runId ? "; the earlier run stands" : ""}` }],
          at,
        );
        continue;
      }
      queued++;
      log.info("email event queued", { ...context, applet_id: applet.id, event_id: result.eventId, run_id: result.runId });
    }
  } finally {
    await deleteEventFiles(app, discard);
  }
  return queued > 0 ? ` (${queued} event${queued === 1 ? "" : "s"})` : " (duplicate)";
}

interface MailRoute {
  plugin: RegisteredMail;
  config: unknown;
  maxAttempts: number;
}

/**
 * What routing a message needs from each mail applet (its plug-in, its parsed trigger config, its
 * retry limit), validated once per version of the applet instead of once per message: keyed by
 * the applet's updated_at and its definition, so an edit applies to the next message. An invalid
 * stored definition is logged once per version and skipped. One cache per app (per database).
 */
const routeCaches = new WeakMap<object, Lru<string, { version: string; route: MailRoute | null }>>();

function mailRoutes(app: App) {
  let cache = routeCaches.get(app.store);
  if (!cache) routeCaches.set(app.store, (cache = new Lru<string, { version: string; route: MailRoute | null }>(10_000)));
  const routes = cache;
  return {
    get(applet: Applet, log: App["log"]): MailRoute | null {
      const version = `${applet.updatedAt}\0${JSON.stringify(applet.definition)}`;
      const hit = routes.get(applet.id);
      if (hit?.version === version) return hit.route;
      const route = parseRoute(applet, log);
      routes.set(applet.id, { version, route });
      return route;
    },
  };
}

function parseRoute(applet: Applet, log: App["log"]): MailRoute | null {
  const def = checkDefinition(applet.definition);
  if (!def.ok) {
    log.warn("email applet skipped: stored definition is invalid", { applet_id: applet.id, problems: def.problems.slice(0, 3) });
    return null;
  }
  const plugin = triggerRegistry.get(def.definition.trigger.type);
  if (plugin?.feed !== "mail") return null;
  const config = plugin.configSchema.safeParse(def.definition.trigger.config);
  if (!config.success) {
    log.warn("email applet skipped: invalid trigger config", { applet_id: applet.id });
    return null;
  }
  return { plugin, config: config.data, maxAttempts: maxAttemptsOf(def.definition) };
}
