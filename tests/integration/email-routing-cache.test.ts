import { afterEach, expect, test } from "vitest";
import { createLogger } from "@/lib/core/log";
import { deliver } from "@/lib/mail/receiver";
import { createTestApp, eventsOf, type TestApp } from "../helpers/db";

/**
 * The SMTP receiver re-parsed every email applet's whole definition for every message. It now
 * validates each applet once per version (its updated_at and definition) and reuses that, so an
 * edit still applies to the very next message.
 */
let app: TestApp;
afterEach(() => app?.cleanup());

const NOW = "2026-03-07T12:00:00.000Z";
const message = (n: number) =>
  Buffer.from(`From: Ada <ada@example.com>\r\nTo: invoices@localhost\r\nSubject: Invoice ${n}\r\nMessage-ID: <m${n}@example.com>\r\nDate: Sat, 07 Mar 2026 12:00:00 +0000\r\n\r\nHi\r\n`);

const valid = { version: 1, trigger: { type: "email", config: { to_alias: "invoices" } }, actions: [{ type: "http", config: { url: "https://example.com/hook" } }] };

async function setDefinition(definition: unknown, insert = false) {
  const row = { id: "a-mail", name: "mail", enabled: true, triggerType: "email", definition, webhookToken: "token-a-mail", now: NOW };
  if (insert) await app.store.applets.insert(row);
  else await app.store.applets.update(row);
}

const events = async () => (await eventsOf(app.store, "a-mail")).length;

test("an email applet's definition is validated once per version, not once per message, and an edit applies to the next message", async () => {
  const lines: string[] = [];
  app = createTestApp({ start: NOW, log: createLogger("whenthen", "debug", (line) => lines.push(line)) });
  // Stored invalid (no action): skipped, and said once for this version rather than for every message.
  (await setDefinition({ ...valid, actions: [] }, true));
  for (const n of [1, 2, 3]) await deliver(app, message(n), ["invoices@localhost"]);
  expect(lines.filter((l) => l.includes("stored definition is invalid"))).toHaveLength(1);
  expect(await events()).toBe(0);

  // Fixed at the same instant (the clock did not move, so updated_at is unchanged): the next message fires.
  (await setDefinition(valid));
  await deliver(app, message(4), ["invoices@localhost"]);
  expect(await events()).toBe(1);

  // A changed alias stops matching at once.
  (await setDefinition({ ...valid, trigger: { type: "email", config: { to_alias: "receipts" } } }));
  await deliver(app, message(5), ["invoices@localhost"]);
  expect(await events()).toBe(1);
});
