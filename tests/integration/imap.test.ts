import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import { createApi } from "@/lib/api";
import { readEventFile } from "@/lib/files/events";
import { testIdentity } from "../helpers/auth";
import { createListeners, listenLockName, type Listeners } from "@/lib/listeners";
import { alertsOf, createTestApp, eventsOf, runsOf, type TestApp } from "../helpers/db";
import { startDovecot, noDovecot, type Dovecot } from "../helpers/dovecot";
import { forEachEngine } from "../helpers/engines";
import { until } from "../helpers/wait";

/**
 * The IMAP trigger against a real Dovecot (tests/helpers/dovecot): mail delivered into the
 * mailbox fires once, with the email trigger's ingredients and its attachment stored; a worker
 * restart neither replays nor misses; IDLE and polling both; a rebuilt mailbox (UIDVALIDITY) does
 * not fire twice; wrong credentials and an unknown mailbox are the trigger's error in the
 * server's words, without the password; of two workers one holds the connection.
 */

/** The listeners' waits, ended only when the test says time passed (or the listener stops). */
function testTimers() {
  const waiting = new Set<() => void>();
  return {
    sleep: (_ms: number, signal: AbortSignal) =>
      new Promise<void>((resolve) => {
        const done = () => {
          waiting.delete(done);
          resolve();
        };
        waiting.add(done);
        signal.addEventListener("abort", done, { once: true });
      }),
    /** Ends every wait in progress: the poll interval or the back-off has passed. */
    pass() {
      for (const done of [...waiting]) done();
    },
    waiting: () => waiting.size,
  };
}

const mail = (n: number, extra = "") =>
  [
    `From: Ada Lovelace <ada@example.com>`,
    `To: me@example.com`,
    `Subject: Invoice ${n}`,
    `Message-ID: <invoice-${n}@example.com>`,
    `Date: Sat, 07 Mar 2026 12:00:00 +0000`,
    `MIME-Version: 1.0`,
    extra
      ? `Content-Type: multipart/mixed; boundary="b1"\n\n--b1\nContent-Type: text/plain\n\nInvoice ${n} attached.\n--b1\nContent-Type: application/pdf; name="inv-${n}.pdf"\nContent-Disposition: attachment; filename="inv-${n}.pdf"\nContent-Transfer-Encoding: base64\n\n${Buffer.from(extra).toString("base64")}\n--b1--`
      : `Content-Type: text/plain\n\nInvoice ${n} is ready.`,
    "",
  ].join("\n");

function imapDefinition(server: Dovecot, config: Record<string, unknown> = {}) {
  return {
    version: 1,
    trigger: { type: "imap", config: { host: server.host, port: server.port, tls: "none", user: server.user, password: "{{secrets.IMAP_PASSWORD}}", ...config } },
    actions: [{ type: "http", config: { url: "https://hooks.example.com/mail", method: "POST", body: { subject: "{{trigger.subject}}" } } }],
  };
}

async function events(app: TestApp, appletId: string): Promise<Record<string, unknown>[]> {
  return (await eventsOf(app.store, appletId)).map((e) => ({ id: e.id, ...e.payload }));
}

const stateOf = async (app: TestApp, id: string) => (await app.store.triggerState.get(id))!;

describe.skipIf(noDovecot)("IMAP trigger against Dovecot", () => {
  let server: Dovecot;
  let app: TestApp;
  let running: Listeners[] = [];
  const listen = (a: TestApp, holder: string, timers = testTimers()) => {
    const l = createListeners(a, { holder, sleep: timers.sleep });
    running.push(l);
    return l;
  };

  beforeAll(async () => {
    server = await startDovecot();
  });
  afterAll(async () => {
    await server?.stop();
  });
  afterEach(async () => {
    await Promise.all(running.map((l) => l.stop()));
    running = [];
    await app?.cleanup();
  });

  async function newApp(): Promise<TestApp> {
    app = createTestApp({ env: { ALLOW_PRIVATE_URLS: "true" } });
    await app.secrets.set("IMAP_PASSWORD", server.password);
    return app;
  }

  test("a delivered mail fires once with the email trigger's ingredients and its attachment stored, then is marked read (IDLE)", async () => {
    await newApp();
    const applet = await app.applets.create({ name: "invoices", definition: imapDefinition(server, { subject_contains: "Invoice" }) });
    const l = listen(app, "w1");
    await l.reconcile();
    expect(l.held()).toEqual([applet.id]);
    // Connected, and where the mailbox stands noted: mail from now on fires.
    await until(async () => (await stateOf(app, applet.id))?.lastValue != null, "the first connection", 10_000, () => "");
    const before = (await server.flags()).size;
    await server.deliver(mail(1, "%PDF-1.4 invoice one"));
    await until(async () => (await events(app, applet.id)).length === 1, "the mail's event");
    const [event] = await events(app, applet.id);
    expect(event).toMatchObject({ subject: "Invoice 1", from: "ada@example.com", from_name: "Ada Lovelace", message_id: "<invoice-1@example.com>", mailbox: "INBOX", text_first_line: "Invoice 1 attached." });
    const attachments = event!.attachments as { filename: string; url: string | null }[];
    expect(attachments).toHaveLength(1);
    expect(attachments[0]!.url).toContain(`/api/files/events/${String(event!.id)}/inv-1.pdf?exp=`);
    expect((await readEventFile(app, String(event!.id), "inv-1.pdf"))?.content.toString()).toBe("%PDF-1.4 invoice one");
    // Marked read once its event is stored.
    await until(async () => [...(await server.flags()).values()].slice(before).every((f) => f.includes("\\Seen")), "the \\Seen flag");
    const runs = await runsOf(app.store, applet.id);
    expect(runs).toHaveLength(1);
    expect((await stateOf(app, applet.id)).lastError).toBeNull();
  });

  test("a worker restart neither replays what fired nor misses what arrived while it was stopped", async () => {
    await newApp();
    const applet = await app.applets.create({ name: "restart", definition: imapDefinition(server, { subject_contains: "Restart", after: "leave" }) });
    const first = listen(app, "w1");
    await first.reconcile();
    await until(async () => (await stateOf(app, applet.id))?.lastValue != null, "the first connection");
    await server.deliver(mail(10).replace("Invoice 10", "Restart A"));
    await until(async () => (await events(app, applet.id)).length === 1, "mail A");
    await first.stop();
    // Delivered while no worker listens.
    await server.deliver(mail(11).replace("Invoice 11", "Restart B"));
    const second = listen(app, "w2");
    await second.reconcile();
    await until(async () => (await events(app, applet.id)).length >= 2, "mail B after the restart");
    // One more pass after B: nothing else arrives.
    await server.deliver(mail(12).replace("Invoice 12", "Restart C"));
    await until(async () => (await events(app, applet.id)).length >= 3, "mail C");
    expect((await events(app, applet.id)).map((e) => e.subject)).toEqual(["Restart A", "Restart B", "Restart C"]);
  });

  test("mail that fired but was not yet marked read when the worker stopped is marked read on the next connection, and does not fire again", async () => {
    await newApp();
    const applet = await app.applets.create({ name: "owed", definition: imapDefinition(server, { subject_contains: "Owed" }) });
    const first = listen(app, "w1");
    await first.reconcile();
    await until(async () => (await stateOf(app, applet.id))?.lastValue != null, "the first connection");
    await first.stop();
    await server.deliver(mail(15).replace("Invoice 15", "Owed"));
    const uid = Math.max(...(await server.flags()).keys());
    // As a worker leaves it when it stops between storing the event and marking the mail read.
    const state = await stateOf(app, applet.id);
    await app.store.triggerState.save(applet.id, { ...state, lastValue: { ...(state.lastValue as object), lastUid: uid, owed: [uid] } }, app.clock.now().toISOString());
    const second = listen(app, "w2");
    await second.reconcile();
    await until(async () => (await server.flags()).get(uid)?.includes("\\Seen") === true, "the owed \\Seen flag");
    await until(async () => ((await stateOf(app, applet.id)).lastValue as { owed: number[] }).owed.length === 0, "the owed list cleared");
    expect(await events(app, applet.id)).toHaveLength(0);
  });

  test("a mailbox rebuilt under a new UIDVALIDITY fires only the mail not fired before", async () => {
    await newApp();
    const applet = await app.applets.create({ name: "rebuilt", definition: imapDefinition(server, { subject_contains: "Rebuilt", after: "leave" }) });
    const first = listen(app, "w1");
    await first.reconcile();
    await until(async () => (await stateOf(app, applet.id))?.lastValue != null, "the first connection");
    await server.deliver(mail(20).replace("Invoice 20", "Rebuilt A"));
    await until(async () => (await events(app, applet.id)).length === 1, "mail A");
    await first.stop();
    await server.deliver(mail(21).replace("Invoice 21", "Rebuilt B"));
    // What the trigger remembers now belongs to a mailbox that no longer exists: other UIDs entirely.
    const state = await stateOf(app, applet.id);
    await app.store.triggerState.save(applet.id, { ...state, lastValue: { ...(state.lastValue as object), uidValidity: "1", lastUid: 99_999 } }, app.clock.now().toISOString());
    const second = listen(app, "w2");
    await second.reconcile();
    await until(async () => (await events(app, applet.id)).length >= 2, "mail B after the rebuild");
    await server.deliver(mail(22).replace("Invoice 22", "Rebuilt C"));
    await until(async () => (await events(app, applet.id)).length >= 3, "mail C");
    expect((await events(app, applet.id)).map((e) => e.subject)).toEqual(["Rebuilt A", "Rebuilt B", "Rebuilt C"]);
  });

  test("a wrong password is the trigger's error in the server's words, without the password, and alerts at the threshold", async () => {
    await newApp();
    await app.store.alerts.saveSettings({ channel: { type: "http", config: { url: "https://alerts.example.com/hook" } }, windowMinutes: 15, triggerThreshold: 2, autoPause: false, autoPauseAfter: 5 }, app.clock.now().toISOString());
    await app.secrets.set("IMAP_PASSWORD", "not-the-password-9f3b");
    const applet = await app.applets.create({ name: "bad login", definition: imapDefinition(server) });
    const timers = testTimers();
    const l = listen(app, "w1", timers);
    await l.reconcile();
    // Dovecot answers a repeated wrong login from the same address more slowly each time: two tries.
    await until(async () => (await stateOf(app, applet.id))?.errorCount === 1, "the first failure");
    expect(await alertsOf(app.store, applet.id)).toEqual([]);
    await until(() => timers.waiting() > 0, "the back-off");
    timers.pass();
    await until(async () => (await stateOf(app, applet.id))?.errorCount === 2, "the second failure");
    const state = await stateOf(app, applet.id);
    expect(state.lastError).toMatch(/refused the user name or password/);
    expect(state.lastError).toMatch(/AUTHENTICATIONFAILED|Authentication failed/i);
    expect(state.lastError).not.toContain("not-the-password-9f3b");
    const alerts = await alertsOf(app.store, applet.id);
    expect(alerts.map((a) => a.kind)).toEqual(["trigger"]);
    // Fixed: the next connection clears the error and records the recovery.
    await app.secrets.set("IMAP_PASSWORD", server.password);
    timers.pass();
    await until(async () => (await stateOf(app, applet.id))?.errorCount === 0, "the recovery");
    expect((await stateOf(app, applet.id)).lastError).toBeNull();
    expect((await alertsOf(app.store, applet.id)).map((a) => a.kind)).toEqual(["trigger", "recovery"]);
  });

  test("an unknown mailbox is the trigger's error naming it and the folders the server has", async () => {
    await newApp();
    const applet = await app.applets.create({ name: "no box", definition: imapDefinition(server, { mailbox: "Invoices" }) });
    const l = listen(app, "w1");
    await l.reconcile();
    await until(async () => ((await stateOf(app, applet.id))?.errorCount ?? 0) >= 1, "the error");
    const error = (await stateOf(app, applet.id)).lastError!;
    expect(error).toContain('cannot open mailbox "Invoices"');
    expect(error).toContain("INBOX, Archive");
  });

  test("the fired mail is moved to the folder asked for", async () => {
    await newApp();
    const applet = await app.applets.create({ name: "move", definition: imapDefinition(server, { subject_contains: "Move me", after: "move", move_to: "Archive" }) });
    const l = listen(app, "w1");
    await l.reconcile();
    await until(async () => (await stateOf(app, applet.id))?.lastValue != null, "the first connection");
    const archived = (await server.flags("Archive")).size;
    await server.deliver(mail(30).replace("Invoice 30", "Move me"));
    await until(async () => (await events(app, applet.id)).length === 1, "the event");
    await until(async () => (await server.flags("Archive")).size === archived + 1, "the move");
  });
});

describe.skipIf(noDovecot)("Test connection (POST /api/triggers/fetch) for IMAP", () => {
  let server: Dovecot;
  let app: TestApp;
  beforeAll(async () => {
    server = await startDovecot();
    app = createTestApp({ env: { ALLOW_PRIVATE_URLS: "true" } });
  });
  afterAll(async () => {
    await app?.cleanup();
    await server?.stop();
  });
  const testConnection = async (config: Record<string, unknown>) => {
    const api = createApi({ app, applets: app.applets, auth: testIdentity(app) });
    const res = await api.handle(new Request("http://localhost/api/triggers/fetch", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ type: "imap", config }) }));
    return { status: res.status, body: (await res.json()) as { ok?: boolean; error?: string; result?: { connected: boolean; summary: string; items: { subject: string }[] }; problems?: { path: string; message: string }[] } };
  };
  const config = (extra: Record<string, unknown> = {}) => ({ host: server.host, port: server.port, tls: "none", user: server.user, password: "{{secrets.IMAP_PASSWORD}}", ...extra });

  test("signs in, says what the mailbox holds and shows the newest matching mail, leaving it unread", async () => {
    await app.secrets.set("IMAP_PASSWORD", server.password);
    await server.deliver(mail(60));
    const { status, body } = await testConnection(config({ subject_contains: "Invoice 60" }));
    expect(status).toBe(200);
    expect(body.ok).toBe(true);
    expect(body.result!.summary).toMatch(/^Signed in to 127\.0\.0\.1 as ada\. INBOX holds \d+ messages?, 1 matching the search; the server offers IDLE/);
    expect(body.result!.items.map((i) => i.subject)).toEqual(["Invoice 60"]);
    expect([...(await server.flags()).values()].at(-1)).not.toContain("\\Seen");
  });

  test("a wrong password, an unknown mailbox and a missing folder to move to are said in the server's words, the password never", async () => {
    await app.secrets.set("IMAP_PASSWORD", "wrong-one-5e2a");
    const wrong = await testConnection(config());
    expect(wrong.body.ok).toBe(false);
    expect(wrong.body.error).toMatch(/^imap: 127\.0\.0\.1:\d+ refused the user name or password \(server: ".*Authentication failed/);
    expect(JSON.stringify(wrong.body)).not.toContain("wrong-one-5e2a");
    await app.secrets.set("IMAP_PASSWORD", server.password);
    expect((await testConnection(config({ mailbox: "Invoices" }))).body.error).toMatch(/cannot open mailbox "Invoices".*Mailbox doesn't exist.*\(the folders there: INBOX, Archive\)/);
    expect((await testConnection(config({ after: "move", move_to: "Done" }))).body.error).toMatch(/the folder to move fired mail to, "Done", cannot be opened/);
  });

  test("a config that cannot be right is refused before connecting, each problem with its field", async () => {
    const { status, body } = await testConnection({ host: "imap://mail.example.com", user: "", password: "x", after: "move" });
    expect(status).toBe(400);
    expect(body.problems!.map((p) => p.path).sort()).toEqual(["config.host", "config.move_to", "config.user"]);
  });
});

describe.skipIf(noDovecot)("IMAP trigger on a server without IDLE", () => {
  let server: Dovecot;
  let app: TestApp;
  beforeAll(async () => {
    server = await startDovecot({ idle: false });
  });
  afterAll(async () => {
    await server?.stop();
  });

  test("polls: new mail fires when the interval has passed", async () => {
    app = createTestApp({ env: { ALLOW_PRIVATE_URLS: "true" } });
    await app.secrets.set("IMAP_PASSWORD", server.password);
    const applet = await app.applets.create({ name: "polled", definition: imapDefinition(server, { poll_seconds: 30 }) });
    const timers = testTimers();
    const l = createListeners(app, { holder: "w1", sleep: timers.sleep });
    try {
      await l.reconcile();
      await until(async () => (await stateOf(app, applet.id))?.lastValue != null && timers.waiting() > 0, "the first check");
      await server.deliver(mail(40));
      // No IDLE: nothing tells the trigger; it finds the mail on its next check.
      timers.pass();
      await until(async () => (await events(app, applet.id)).length === 1, "the polled mail");
      expect((await events(app, applet.id))[0]).toMatchObject({ subject: "Invoice 40" });
    } finally {
      await l.stop();
      await app.cleanup();
    }
  });
});

forEachEngine((engine) => {
  describe.skipIf(noDovecot)(`IMAP trigger with two workers (${engine.name})`, () => {
    test("only one worker holds the mailbox's connection, and a delivered mail fires once", async () => {
      const server = await startDovecot();
      const a = createTestApp({ engine, env: { ALLOW_PRIVATE_URLS: "true" } });
      const b = createTestApp({ peerOf: a, env: { ALLOW_PRIVATE_URLS: "true" } });
      const one = createListeners(a, { holder: "worker-a", sleep: testTimers().sleep });
      const two = createListeners(b, { holder: "worker-b", sleep: testTimers().sleep });
      try {
        await a.secrets.set("IMAP_PASSWORD", server.password);
        const applet = await a.applets.create({ name: "two workers", definition: imapDefinition(server) });
        await Promise.all([one.reconcile(), two.reconcile()]);
        expect([...one.held(), ...two.held()]).toEqual([applet.id]);
        const holder = one.held().length ? "worker-a" : "worker-b";
        expect((await a.store.jobLocks.get(listenLockName(applet.id)))?.lockedBy).toBe(holder);
        await until(async () => (await a.store.triggerState.get(applet.id))?.lastValue != null, "the first connection");
        await server.deliver(mail(50));
        await until(async () => (await events(a, applet.id)).length === 1, "the event");
        await Promise.all([one.reconcile(), two.reconcile()]);
        expect([...one.held(), ...two.held()]).toEqual([applet.id]);
        expect(await events(a, applet.id)).toHaveLength(1);
      } finally {
        await Promise.all([one.stop(), two.stop()]);
        await b.cleanup().catch(() => undefined);
        await a.cleanup();
        await server.stop();
      }
    });
  });
});
