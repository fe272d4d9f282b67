import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import http from "node:http";
import net, { type AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { simpleParser } from "mailparser";
import nodemailer from "nodemailer";
import { SMTPServer } from "smtp-server";
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "vitest";
import { emailAction, type EmailActionConfig } from "../../lib/actions/email";
import type { ActionContext } from "../../lib/actions/types";
import { createApp, type App } from "../../lib/app";
import { ManualClock } from "../../lib/core/clock";
import { ActionError } from "../../lib/core/errors";
import { silentLogger } from "../../lib/core/log";
import { deleteEventFiles } from "../../lib/files/events";
import { handleFileRequest } from "../../lib/files/serve";
import { LOOP_HEADER } from "../../lib/mail/headers";
import { MAX_MESSAGE_BYTES, startReceiver, type Receiver } from "../../lib/mail/receiver";
import { forEachEngine, testSql } from "../helpers/engines";
import { allEventsOf, eventsOf as storedEventsOf, runsOf } from "../helpers/db";

const FIXTURES = path.join(__dirname, "../../fixtures/inbound");
const fixture = (name: string) => readFileSync(path.join(FIXTURES, name));
const START = "2026-03-10T08:20:00.000Z";

forEachEngine((engine) => {
  let dataDir: string;
  let clock: ManualClock;
  let app: App;
  let receiver: Receiver;
  let fileServer: http.Server;
  let fileBase: string;

  const APPLETS = { invoices: "a-invoices", receipts: "a-receipts", billing: "a-billing" } as const;

  async function addApplet(id: string, trigger: Record<string, unknown>, enabled = true) {
    await app.store.applets.insert({
      id,
      name: id,
      enabled,
      triggerType: "email",
      definition: {
        version: 1,
        trigger: { type: "email", config: trigger },
        actions: [{ type: "http", config: { url: "https://example.com/hook" } }],
        retry: { max_attempts: 3 },
      },
      webhookToken: `token-${id}`,
      now: START,
    });
  }

  const count = async (table: "events" | "runs", appletId?: string): Promise<number> =>
    table === "runs" ? (await runsOf(app.store, appletId)).length : (appletId ? await storedEventsOf(app.store, appletId) : await allEventsOf(app.store)).length;

  const eventsOf = async (appletId: string) => (await storedEventsOf(app.store, appletId)).map((e) => ({ id: e.id, dedupe_key: e.dedupeKey, payload: e.payload, source: e.source }));

  // A clean slate between cases: no store method deletes queued runs and their events (retention keeps them).
  async function clearEvents() {
    const sql = testSql(app.store);
    await sql.run("DELETE FROM event_files");
    await sql.run("DELETE FROM runs");
    await sql.run("DELETE FROM events");
  }

  function client(port = receiver.port) {
    return nodemailer.createTransport({ host: "127.0.0.1", port, secure: false, ignoreTLS: true });
  }

  async function deliver(raw: Buffer, to: string[], port = receiver.port) {
    const transport = client(port);
    try {
      return await transport.sendMail({ envelope: { from: "ada@example.com", to }, raw });
    } finally {
      transport.close();
    }
  }

  /**
   * Speaks SMTP over a raw socket (nodemailer refuses to send some of the hostile forms itself):
   * `send` writes one command and resolves with the reply code.
   */
  async function openSmtp(port: number) {
    const socket = net.connect(port, "127.0.0.1");
    socket.setEncoding("utf8");
    let buffer = "";
    let failure: Error | null = null;
    const pending: { resolve: (code: number) => void; reject: (err: Error) => void }[] = [];
    const early: number[] = [];
    socket.on("data", (chunk: string) => {
      buffer += chunk;
      let nl: number;
      while ((nl = buffer.indexOf("\r\n")) >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 2);
        // A multi-line reply is "250-…" lines then one "250 …" line.
        if (!/^\d{3}( |$)/.test(line)) continue;
        const code = Number(line.slice(0, 3));
        const next = pending.shift();
        if (next) next.resolve(code);
        else early.push(code);
      }
    });
    const fail = (err: Error) => {
      failure ??= err;
      for (const p of pending.splice(0)) p.reject(failure);
    };
    socket.on("error", fail);
    socket.on("close", () => fail(new Error("connection closed")));
    const reply = () =>
      new Promise<number>((resolve, reject) => {
        const code = early.shift();
        if (code !== undefined) return resolve(code);
        if (failure) return reject(failure);
        pending.push({ resolve, reject });
      });
    const greeting = await reply();
    return {
      greeting,
      send: (cmd: string) => {
        socket.write(cmd.endsWith("\r\n") ? cmd : `${cmd}\r\n`);
        return reply();
      },
      close: () => socket.destroy(),
    };
  }

  /** Runs the commands in order on a fresh connection and returns every reply code. */
  async function smtpSession(port: number, commands: string[]): Promise<number[]> {
    const conn = await openSmtp(port);
    try {
      const codes: number[] = [];
      for (const cmd of commands) codes.push(await conn.send(cmd));
      return codes;
    } finally {
      conn.close();
    }
  }

  function actionContext(overrides: Partial<App["config"]> = {}, eventId = "0b8f5a52-6d9c-4f0e-9a43-5c1d7e2f8a10", actionIndex = 1): ActionContext {
    return {
      http: app.http,
      clock,
      log: silentLogger,
      config: { ...app.config, ...overrides },
      run: { runId: "run-1", appletId: APPLETS.invoices, eventId, attempt: 1, actionIndex },
      idempotencyKey: `${eventId}:${actionIndex}`,
      warn: () => {},
      progress: undefined,
      saveProgress: async () => {},
      secret: () => {},
      redact: (value) => value,
    };
  }

  const outboxFiles = () => (existsSync(path.join(dataDir, "outbox")) ? readdirSync(path.join(dataDir, "outbox")) : []);

  /** A local SMTP server standing in for the SMTP_URL relay; records what it accepts. */
  async function startRelay(answer?: (raw: Buffer) => Error | null) {
    const received: { envelopeTo: string[]; raw: Buffer }[] = [];
    const server = new SMTPServer({
      authOptional: true,
      disabledCommands: ["AUTH", "STARTTLS"],
      logger: false,
      disableReverseLookup: true,
      onData(stream, session, callback) {
        const chunks: Buffer[] = [];
        stream.on("data", (c: Buffer) => chunks.push(c));
        stream.on("end", () => {
          const raw = Buffer.concat(chunks);
          const err = answer?.(raw) ?? null;
          if (!err) received.push({ envelopeTo: session.envelope.rcptTo.map((r) => r.address), raw });
          callback(err);
        });
      },
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
    const port = (server.server.address() as AddressInfo).port;
    return { port, received, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
  }

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), "whenthen-email-"));
    clock = new ManualClock(START);
    app = createApp({ env: { DATA_DIR: dataDir, INBOUND_DOMAIN: "hooks.example", PUBLIC_URL: "https://auto.example.com" }, clock, log: silentLogger, store: engine.open(dataDir) });
    await addApplet(APPLETS.invoices, { to_alias: "invoices" });
    await addApplet(APPLETS.receipts, { to_alias: "receipts", from_contains: "example.com", subject_regex: "^receipt" });
    await addApplet("a-disabled", {}, false);
    receiver = await startReceiver(app, { port: 0, host: "127.0.0.1" });
    fileServer = http.createServer((req, res) => {
      const url = new URL(req.url ?? "/", "http://localhost");
      handleFileRequest(app, req, res, url.pathname, url.searchParams);
    });
    await new Promise<void>((resolve) => fileServer.listen(0, "127.0.0.1", () => resolve()));
    fileBase = `http://127.0.0.1:${(fileServer.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await receiver?.close();
    await new Promise<void>((resolve) => (fileServer ? fileServer.close(() => resolve()) : resolve()));
    void app?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  beforeEach(async () => {
    clock.set(START);
    await clearEvents();
  });

  describe("inbound email (AC6)", () => {
    test("AC6: a recipient matching to_alias creates a run with from, subject and text populated", async () => {
      const info = await deliver(fixture("plain.eml"), ["invoices@hooks.example"]);
      expect(info.response).toMatch(/^250 /);
      expect(await count("events")).toBe(1);
      expect(await count("runs", APPLETS.invoices)).toBe(1);
      const [event] = await eventsOf(APPLETS.invoices);
      expect(event!.source).toBe("email");
      expect(event!.dedupe_key).toBe("<CAF3x9qWz1-plain-2026@mail.example.com>");
      expect(event!.payload).toMatchObject({
        from: "ada@example.com",
        from_name: "Ada Lovelace",
        subject: "Invoice INV-2026-0042 is ready",
        text_first_line: "Hi,",
      });
      expect(event!.payload.text).toContain("Your invoice INV-2026-0042 for March is ready.");
      const run = (await app.store.runs.list({ appletId: APPLETS.invoices })).runs[0]!;
      expect(run).toMatchObject({ status: "queued", eventId: event!.id, maxAttempts: 3 });
    });

    test("AC6: the alias matches the envelope recipient case-insensitively, with +tags, also when To says otherwise (Bcc)", async () => {
      await deliver(fixture("plain.eml"), ["INVOICES+march@Hooks.Example"]);
      expect(await count("events", APPLETS.invoices)).toBe(1);
      await clearEvents();
      const bcc = Buffer.from(fixture("plain.eml").toString().replace("To: Invoices <invoices@hooks.example>", "To: someone@elsewhere.example"));
      await deliver(bcc, ["invoices@hooks.example"]);
      expect(await count("events", APPLETS.invoices)).toBe(1);
    });

    test("AC6: a recipient at INBOUND_DOMAIN that matches no applet gets 250 and creates nothing", async () => {
      const info = await deliver(fixture("with-attachment.eml"), ["nobody@hooks.example"]);
      expect(info.response).toMatch(/^250 /);
      expect(info.accepted).toEqual(["nobody@hooks.example"]);
      expect(await count("events")).toBe(0);
      expect(await count("runs")).toBe(0);
      // No store method lists the stored files: counted in their table.
      expect(Number((await testSql(app.store).get<{ n: number }>("SELECT COUNT(*) AS n FROM event_files"))!.n)).toBe(0);
    });

    test("AC6: rules combine — from_contains and subject_regex must both match as well", async () => {
      const receipt = Buffer.from(fixture("plain.eml").toString().replace("Subject: Invoice", "Subject: Receipt for invoice"));
      await deliver(receipt, ["receipts@hooks.example"]);
      expect(await count("events", APPLETS.receipts)).toBe(1);
      await clearEvents();
      // Same alias, subject does not match the regex: accepted, nothing stored.
      const info = await deliver(fixture("plain.eml"), ["receipts@hooks.example"]);
      expect(info.response).toMatch(/^250 /);
      expect(await count("events")).toBe(0);
    });

    test("AC6: a recipient at another domain gets 550 at RCPT TO and nothing is stored", async () => {
      const err = await deliver(fixture("plain.eml"), ["victim@gmail.com"]).then(
        () => null,
        (e: unknown) => e as { responseCode?: number; code?: string },
      );
      expect(err).not.toBeNull();
      expect(err!.code).toBe("EENVELOPE");
      expect(err!.responseCode).toBe(550);
      expect(await count("events")).toBe(0);
    });

    test("AC6: relay and address tricks are refused at RCPT TO with a 5xx and nothing is stored", async () => {
      const hostile = [
        "victim@gmail.com",
        "victim%gmail.com@hooks.example",
        "@hooks.example:victim@gmail.com",
        "gmail.com!victim@hooks.example",
        "x@hooks.example.evil.com",
        "x@evilhooks.example",
        "x@[127.0.0.1]",
        `${"a".repeat(65)}@hooks.example`,
        '"victim@gmail.com"@hooks.example',
      ];
      for (const rcpt of hostile) {
        const [ehlo, mail, rcptCode, data] = await smtpSession(receiver.port, ["EHLO client.example", "MAIL FROM:<ada@example.com>", `RCPT TO:<${rcpt}>`, "DATA"]);
        expect(ehlo, rcpt).toBe(250);
        expect(mail, rcpt).toBe(250);
        expect(rcptCode, rcpt).toBeGreaterThanOrEqual(500);
        expect(rcptCode, rcpt).toBeLessThan(600);
        // No accepted recipient, so there is no transaction to put a message in.
        expect(data, rcpt).toBe(503);
      }
      // A local part of exactly 64 characters is fine.
      const [, , ok] = await smtpSession(receiver.port, ["EHLO client.example", "MAIL FROM:<ada@example.com>", `RCPT TO:<${"a".repeat(64)}@hooks.example>`]);
      expect(ok).toBe(250);
      expect(await count("events")).toBe(0);
    });

    test("AC6: more than 100 recipients in one transaction are refused from the 101st on", async () => {
      const rcpts = Array.from({ length: 101 }, (_, i) => `RCPT TO:<user${i}@hooks.example>`);
      const codes = await smtpSession(receiver.port, ["EHLO client.example", "MAIL FROM:<ada@example.com>", ...rcpts]);
      expect(codes.slice(2, 102).every((c) => c === 250)).toBe(true);
      // RFC 5321 §4.5.3.1.10: "452 too many recipients", the sender sends the rest in another transaction.
      expect(codes[102]).toBe(452);
    });

    test("AC6: the same message_id delivered twice creates one event", async () => {
      const first = await deliver(fixture("plain.eml"), ["invoices@hooks.example"]);
      const second = await deliver(fixture("plain.eml"), ["invoices@hooks.example"]);
      expect(first.response).toMatch(/^250 /);
      expect(second.response).toMatch(/^250 /);
      expect(await count("events", APPLETS.invoices)).toBe(1);
      expect(await count("runs", APPLETS.invoices)).toBe(1);
      // Without a Message-ID the generated one (a hash of the bytes) dedupes the same way.
      await deliver(fixture("no-message-id.eml"), ["invoices@hooks.example"]);
      await deliver(fixture("no-message-id.eml"), ["invoices@hooks.example"]);
      expect(await count("events", APPLETS.invoices)).toBe(2);
    });

    test("AC6: the three fixtures delivered through the receiver normalize to the same field set; the one without Message-ID gets a generated one", async () => {
      for (const f of ["plain.eml", "with-attachment.eml", "no-message-id.eml"]) await deliver(fixture(f), ["invoices@hooks.example"]);
      const payloads = (await eventsOf(APPLETS.invoices)).map((e) => e.payload);
      expect(payloads).toHaveLength(3);
      const keys = Object.keys(payloads[0]!).sort();
      for (const p of payloads) {
        expect(Object.keys(p).sort()).toEqual(keys);
        expect(p).toMatchObject({ from: "ada@example.com", subject: "Invoice INV-2026-0042 is ready", to: ["invoices@hooks.example"], cc: ["bob@example.org"] });
        expect(p.text).toBe(payloads[0]!.text);
      }
      expect(keys).toEqual(["attachments", "cc", "date", "date_source", "from", "from_name", "html", "message_id", "reply_to", "subject", "text", "text_first_line", "to"]);
      expect(payloads[2]!.message_id).toMatch(/^<[0-9a-f]{64}@whenthen\.generated>$/);
    });

    test("AC6: the attachment fixture is stored in the database under its event (not on this host's disk) and its signed URL returns 200 before exp and 403 after", async () => {
      await deliver(fixture("with-attachment.eml"), ["invoices@hooks.example"]);
      const [event] = await eventsOf(APPLETS.invoices);
      const attachments = event!.payload.attachments as { filename: string; content_type: string; size: number; url: string }[];
      expect(attachments).toHaveLength(1);
      const att = attachments[0]!;
      expect(att).toMatchObject({ filename: "INV-2026-0042.pdf", content_type: "application/pdf", size: 596 });
      const stored = (await app.store.eventFiles.get(event!.id, "INV-2026-0042.pdf"))!;
      expect(stored).toMatchObject({ contentType: "application/pdf", size: 596 });
      expect(stored.content.subarray(0, 8).toString()).toBe("%PDF-1.4");
      expect(existsSync(path.join(dataDir, "files"))).toBe(false);

      const url = new URL(att.url);
      expect(url.origin).toBe("https://auto.example.com");
      expect(url.pathname).toBe(`/api/files/events/${event!.id}/INV-2026-0042.pdf`);
      const exp = Number(url.searchParams.get("exp"));
      expect(exp * 1000 - clock.now().getTime()).toBe(24 * 60 * 60 * 1000);
      const local = `${fileBase}${url.pathname}${url.search}`;

      clock.advance(24 * 60 * 60 * 1000 - 1000);
      const ok = await fetch(local);
      expect(ok.status).toBe(200);
      expect(ok.headers.get("content-type")).toBe("application/pdf");
      expect(ok.headers.get("x-content-type-options")).toBe("nosniff");
      expect(ok.headers.get("content-disposition")).toBe(`attachment; filename="INV-2026-0042.pdf"; filename*=UTF-8''INV-2026-0042.pdf`);
      expect(Buffer.from(await ok.arrayBuffer()).equals(stored.content)).toBe(true);

      clock.advance(1000);
      const expired = await fetch(local);
      expect(expired.status).toBe(403);
      await expired.arrayBuffer();
    });

    test("AC6: a tampered signature or path gets 403, a missing file with a valid link 404", async () => {
      await deliver(fixture("with-attachment.eml"), ["invoices@hooks.example"]);
      const [event] = await eventsOf(APPLETS.invoices);
      const url = new URL((event!.payload.attachments as { url: string }[])[0]!.url);
      const get = async (p: string) => {
        const res = await fetch(`${fileBase}${p}`);
        await res.arrayBuffer();
        return res.status;
      };
      const sig = url.searchParams.get("sig")!;
      const exp = url.searchParams.get("exp")!;
      const flipped = (sig[0] === "A" ? "B" : "A") + sig.slice(1);
      expect(await get(`${url.pathname}?exp=${exp}&sig=${flipped}`)).toBe(403);
      expect(await get(`${url.pathname}?exp=${Number(exp) + 3600}&sig=${sig}`)).toBe(403);
      expect(await get(`${url.pathname}?exp=${exp}`)).toBe(403);
      expect(await get(`${url.pathname.replace("INV-2026-0042.pdf", ".meta.json")}?exp=${exp}&sig=${sig}`)).toBe(403);
      expect(await get(`${url.pathname}${url.search}`)).toBe(200);
      await deleteEventFiles(app, [event!.id]);
      expect(await app.store.eventFiles.get(event!.id, "INV-2026-0042.pdf")).toBeNull();
      expect(await get(`${url.pathname}${url.search}`)).toBe(404);
    });

    test("AC6: one message matching two applets gives each event its own copy of the attachments; a redelivery leaves no stray files", async () => {
      await addApplet(APPLETS.billing, { from_contains: "ada@" });
      try {
        await deliver(fixture("with-attachment.eml"), ["invoices@hooks.example"]);
        await deliver(fixture("with-attachment.eml"), ["invoices@hooks.example"]);
        const ids = [...(await eventsOf(APPLETS.invoices)), ...(await eventsOf(APPLETS.billing))].map((e) => e.id);
        expect(ids).toHaveLength(2);
        // No store method lists the stored files: their owners from their table.
        const owners = await testSql(app.store).all<{ event_id: string }>("SELECT DISTINCT event_id FROM event_files");
        expect(owners.map((r) => r.event_id).sort()).toEqual([...ids].sort());
        await deleteEventFiles(app, [ids[0]!]);
        expect((await app.store.eventFiles.get(ids[1]!, "INV-2026-0042.pdf"))?.content.length).toBe(596);
      } finally {
        await app.store.applets.delete(APPLETS.billing);
      }
    });

    test("AC6: mail this install sent (loop marker) is accepted and not fired on again", async () => {
      const looped = Buffer.from(fixture("plain.eml").toString().replace("MIME-Version: 1.0", `${LOOP_HEADER}: 0b8f5a52-6d9c-4f0e-9a43-5c1d7e2f8a10\r\nMIME-Version: 1.0`));
      const info = await deliver(looped, ["invoices@hooks.example"]);
      expect(info.response).toMatch(/^250 /);
      expect(await count("events")).toBe(0);
    });

    test("AC6: a message over the size limit gets 552 even from a client that ignores SIZE; the default limit is 25 MB", async () => {
      expect(MAX_MESSAGE_BYTES).toBe(25 * 1024 * 1024);
      const small = await startReceiver(app, { port: 0, host: "127.0.0.1", maxBytes: 4096 });
      try {
        const big = `Subject: big\r\n\r\n${"x".repeat(76)}\r\n`.repeat(80);
        const codes = await smtpSession(small.port, ["EHLO client.example", "MAIL FROM:<ada@example.com>", "RCPT TO:<invoices@hooks.example>", "DATA", `${big}.`]);
        expect(codes).toEqual([250, 250, 250, 354, 552]);
        const fits = await smtpSession(small.port, ["EHLO client.example", "MAIL FROM:<ada@example.com>", "RCPT TO:<nobody@hooks.example>", "DATA", "Subject: small\r\n\r\nhello\r\n."]);
        expect(fits).toEqual([250, 250, 250, 354, 250]);
        expect(await count("events")).toBe(0);
      } finally {
        await small.close();
      }
      // The default receiver advertises 25 MB.
      const transport = client();
      try {
        await transport.verify();
      } finally {
        transport.close();
      }
      const ehlo = await new Promise<string>((resolve, reject) => {
        const s = net.connect(receiver.port, "127.0.0.1");
        let text = "";
        s.setEncoding("utf8");
        s.on("data", (d: string) => {
          text += d;
          if (text.includes("220 ") && !text.includes("EHLO-SENT")) {
            text += "EHLO-SENT";
            s.write("EHLO client.example\r\n");
          } else if (/\r\n250 [^\r\n]*\r\n$/.test(text)) {
            s.destroy();
            resolve(text);
          }
        });
        s.on("error", reject);
      });
      expect(ehlo).toMatch(new RegExp(`\\r\\n250[- ]SIZE ${25 * 1024 * 1024}\\r\\n`));
      expect(ehlo).not.toContain("STARTTLS");
      expect(ehlo).not.toContain("AUTH");
    });

    test("AC6: close waits for a message in flight, ends idle connections, and stops accepting", async () => {
      const r = await startReceiver(app, { port: 0, host: "127.0.0.1" });
      const busy = await openSmtp(r.port);
      const idle = await openSmtp(r.port);
      try {
        expect(await busy.send("EHLO client.example")).toBe(250);
        expect(await idle.send("EHLO idle.example")).toBe(250);
        expect(await busy.send("MAIL FROM:<ada@example.com>")).toBe(250);
        expect(await busy.send("RCPT TO:<invoices@hooks.example>")).toBe(250);
        expect(await busy.send("DATA")).toBe(354);
        let closed = false;
        const closing = r.close().then(() => (closed = true));
        // The message being received is in flight: the shutdown waits for it.
        await new Promise((resolve) => setTimeout(resolve, 50));
        expect(closed).toBe(false);
        const body = fixture("plain.eml").toString().replace(/\r\n$/, "");
        expect(await busy.send(`${body}\r\n.`)).toBe(250);
        await closing;
        expect(await count("events", APPLETS.invoices)).toBe(1);
        // The idle connection was told 421 and closed; new connections are refused.
        await expect(idle.send("NOOP")).resolves.toBe(421);
        await expect(openSmtp(r.port)).rejects.toThrow();
      } finally {
        busy.close();
        idle.close();
        await r.close();
      }
    });
  });

  describe("email action (AC19)", () => {
    const config: EmailActionConfig = { to: 'Me <me@example.com>, "Doe, Jane" <jane@example.org>', subject: "New invoice: INV-2026-0042", body_markdown: "**Amount:** EUR 59.90\n\n<img src=https://tracker.example/x.png>" };

    test("AC19: with SMTP_URL unset the action writes one .eml under DATA_DIR/outbox whose To, Subject and Message-ID match, and no relay is contacted", async () => {
      const relay = await startRelay();
      try {
        const before = outboxFiles();
        const ctx = actionContext({ smtpUrl: undefined, emailFrom: "Automations <automations@auto.example.com>" });
        const { output } = await emailAction.run(emailAction.configSchema.parse(config), ctx);
        const after = outboxFiles().filter((f) => !before.includes(f));
        expect(after).toHaveLength(1);
        expect(after[0]).toMatch(/^20260310T082000000Z-0b8f5a52-6d9c-4f0e-9a43-5c1d7e2f8a10\.1\.eml$/);
        const file = path.join(dataDir, "outbox", after[0]!);
        expect(output).toMatchObject({ via: "outbox", path: file, message_id: "<0b8f5a52-6d9c-4f0e-9a43-5c1d7e2f8a10.1@auto.example.com>" });

        const parsed = await simpleParser(readFileSync(file));
        const to = Array.isArray(parsed.to) ? parsed.to.flatMap((t) => t.value) : parsed.to!.value;
        expect(to.map((t) => t.address)).toEqual(["me@example.com", "jane@example.org"]);
        expect(parsed.subject).toBe("New invoice: INV-2026-0042");
        expect(parsed.messageId).toBe("<0b8f5a52-6d9c-4f0e-9a43-5c1d7e2f8a10.1@auto.example.com>");
        expect(parsed.from!.value[0]!.address).toBe("automations@auto.example.com");
        expect(parsed.headers.get("auto-submitted")).toBe("auto-generated");
        expect(parsed.text).toContain("**Amount:** EUR 59.90");
        expect(parsed.html).toContain("<strong>Amount:</strong>");
        // Raw HTML from a template (possibly a stranger's data) is shown as text, never as markup.
        expect(parsed.html).not.toContain("<img");
        expect(relay.received).toHaveLength(0);
      } finally {
        await relay.close();
      }
    });

    test("AC19: with SMTP_URL set the relay receives exactly one message and nothing is written to the outbox", async () => {
      const relay = await startRelay();
      try {
        const before = outboxFiles();
        const ctx = actionContext({ smtpUrl: `smtp://127.0.0.1:${relay.port}`, emailFrom: "automations@auto.example.com" });
        const { output } = await emailAction.run(emailAction.configSchema.parse(config), ctx);
        expect(relay.received).toHaveLength(1);
        expect(relay.received[0]!.envelopeTo).toEqual(["me@example.com", "jane@example.org"]);
        const parsed = await simpleParser(relay.received[0]!.raw);
        expect(parsed.subject).toBe("New invoice: INV-2026-0042");
        expect(parsed.messageId).toBe("<0b8f5a52-6d9c-4f0e-9a43-5c1d7e2f8a10.1@auto.example.com>");
        expect(output).toMatchObject({ via: "smtp", accepted: ["me@example.com", "jane@example.org"], rejected: [] });
        expect(outboxFiles()).toEqual(before);
      } finally {
        await relay.close();
      }
    });

    test("AC19: a retry of the same step sends the same Message-ID (relays that dedupe deliver once)", async () => {
      const relay = await startRelay();
      try {
        const ctx = actionContext({ smtpUrl: `smtp://127.0.0.1:${relay.port}` });
        await emailAction.run(emailAction.configSchema.parse(config), ctx);
        await emailAction.run(emailAction.configSchema.parse(config), { ...ctx, run: { ...ctx.run, attempt: 2 } });
        const ids = await Promise.all(relay.received.map(async (m) => (await simpleParser(m.raw)).messageId));
        expect(ids).toHaveLength(2);
        expect(ids[0]).toBe(ids[1]);
      } finally {
        await relay.close();
      }
    });

    test("AC19: relay replies 421/450/451/452 and network errors are retryable; other 4xx (454, 455, 471) and 5xx are not", async () => {
      const cases: [number, boolean][] = [
        [421, true],
        [450, true],
        [451, true],
        [452, true],
        [550, false],
        [554, false],
        // Other 4xx replies are not in the spec's list: a relay's "TLS not available" (454), "cannot
        // accommodate parameters" (455) or a policy refusal (471) will say the same next time.
        [454, false],
        [455, false],
        [471, false],
      ];
      for (const [code, retryable] of cases) {
        const relay = await startRelay(() => Object.assign(new Error(`${code} refused for the test`), { responseCode: code }));
        try {
          const err = await emailAction.run(emailAction.configSchema.parse(config), actionContext({ smtpUrl: `smtp://127.0.0.1:${relay.port}` })).then(
            () => null,
            (e: unknown) => e,
          );
          expect(err, String(code)).toBeInstanceOf(ActionError);
          expect((err as ActionError).retryable, String(code)).toBe(retryable);
        } finally {
          await relay.close();
        }
      }
      // Nothing listens on the port of a closed server: connection refused.
      const gone = await startRelay();
      await gone.close();
      const err = await emailAction.run(emailAction.configSchema.parse(config), actionContext({ smtpUrl: `smtp://127.0.0.1:${gone.port}` })).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ActionError);
      expect((err as ActionError).retryable).toBe(true);
    });

    test("AC19: header injection, invalid addresses and more than 50 recipients are refused without sending", async () => {
      const before = outboxFiles();
      const ctx = actionContext({ smtpUrl: undefined });
      const attempts: Partial<EmailActionConfig>[] = [
        { to: "me@example.com\r\nBcc: victim@example.org" },
        { subject: "hello\r\nBcc: victim@example.org" },
        { to: "not-an-address" },
        { to: "me@example.com, @example.org" },
        { to: Array.from({ length: 51 }, (_, i) => `u${i}@example.com`).join(", ") },
        { to: "   " },
      ];
      for (const a of attempts) {
        const err = await emailAction.run({ ...config, ...a }, ctx).then(
          () => null,
          (e: unknown) => e,
        );
        expect(err, JSON.stringify(a)).toBeInstanceOf(ActionError);
        expect((err as ActionError).retryable, JSON.stringify(a)).toBe(false);
        // The stored config is refused on save as well.
        expect(emailAction.configSchema.safeParse({ ...config, ...a }).success, JSON.stringify(a)).toBe(false);
      }
      expect(outboxFiles()).toEqual(before);
      // 50 is the limit, not 49.
      const fifty = Array.from({ length: 50 }, (_, i) => `u${i}@example.com`).join(", ");
      await expect(emailAction.run({ ...config, to: fifty }, ctx)).resolves.toMatchObject({ output: { via: "outbox" } });
    });
  });
});
