import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, test } from "vitest";
import iconv from "iconv-lite";
import { generatedMessageId, parseInbound } from "../../lib/mail/normalize";

const fixture = (name: string) => readFileSync(path.join(__dirname, "../../fixtures/inbound", name));
const receivedAt = new Date("2026-03-10T08:20:00.000Z");
// Adds date_source (and original_filename on each attachment).
const FIELDS = ["attachments", "cc", "date", "date_source", "from", "from_name", "html", "message_id", "reply_to", "subject", "text", "text_first_line", "to"];

describe("email normalization (mailparser → trigger fields)", () => {
  test("AC6: the three fixtures normalize to the same field set with the same sender, subject and text", async () => {
    const [plain, attached, noId] = await Promise.all(
      ["plain.eml", "with-attachment.eml", "no-message-id.eml"].map((f) => parseInbound(fixture(f), { receivedAt })),
    );
    for (const r of [plain!, attached!, noId!]) {
      expect(Object.keys(r.email).sort()).toEqual(FIELDS);
      expect(r.email.from).toBe("ada@example.com");
      expect(r.email.from_name).toBe("Ada Lovelace");
      expect(r.email.to).toEqual(["invoices@hooks.example"]);
      expect(r.email.cc).toEqual(["bob@example.org"]);
      expect(r.email.subject).toBe("Invoice INV-2026-0042 is ready");
      expect(r.email.text).toBe(plain!.email.text);
      expect(r.email.text_first_line).toBe("Hi,");
      expect(r.email.date).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    }
    expect(plain!.email.text).toContain("Amount due: EUR 59.90");
    expect(plain!.email.date).toBe("2026-03-10T08:15:02.000Z");
    expect(plain!.email.message_id).toBe("<CAF3x9qWz1-plain-2026@mail.example.com>");
    expect(plain!.email.html).toBeNull();
    expect(plain!.email.attachments).toEqual([]);
    expect(attached!.email.html).toContain("<b>INV-2026-0042</b>");
    expect(attached!.email.attachments).toEqual([{ filename: "INV-2026-0042.pdf", original_filename: "INV-2026-0042.pdf", content_type: "application/pdf", size: 596, url: null }]);
    expect(attached!.contents[0]!.subarray(0, 8).toString()).toBe("%PDF-1.4");
  });

  test("AC6: the message without a Message-ID gets one generated from its bytes, stable for the same bytes", async () => {
    const raw = fixture("no-message-id.eml");
    const a = await parseInbound(raw, { receivedAt });
    const b = await parseInbound(Buffer.from(raw), { receivedAt: new Date("2030-01-01T00:00:00Z") });
    expect(a.email.message_id).toMatch(/^<[0-9a-f]{64}@whenthen\.generated>$/);
    expect(a.email.message_id).toBe(generatedMessageId(raw));
    expect(b.email.message_id).toBe(a.email.message_id);
    const other = await parseInbound(Buffer.concat([raw, Buffer.from("P.S. one more line\r\n")]), { receivedAt });
    expect(other.email.message_id).not.toBe(a.email.message_id);
  });

  test("AC6: missing headers give empty values, the receive time as date, and unique sanitized attachment names", async () => {
    const raw = Buffer.from(
      [
        "Content-Type: multipart/mixed; boundary=b",
        "",
        "--b",
        "Content-Type: text/plain",
        "",
        "",
        "  first real line  ",
        "--b",
        'Content-Type: text/html; name="../../etc/passwd"',
        'Content-Disposition: attachment; filename="../../etc/passwd"',
        "",
        "<b>x</b>",
        "--b",
        'Content-Type: text/html; name="passwd"',
        'Content-Disposition: attachment; filename="passwd"',
        "",
        "<b>y</b>",
        "--b",
        "Content-Type: application/x-unknown; foo=\"bar\"",
        "Content-Disposition: attachment",
        "",
        "zzz",
        "--b--",
        "",
      ].join("\r\n"),
    );
    const { email } = await parseInbound(raw, { receivedAt });
    expect(email.from).toBe("");
    expect(email.subject).toBe("");
    expect(email.date).toBe(receivedAt.toISOString());
    expect(email.text_first_line).toBe("first real line");
    expect(email.attachments.map((a) => a.filename)).toEqual(["passwd", "passwd (2)", "attachment-3"]);
    expect(email.attachments.map((a) => a.content_type)).toEqual(["text/html", "text/html", "application/x-unknown"]);
  });
});

describe("mail: what real senders send", () => {
  const message = (headers: string[], body = "Hello") => Buffer.from([...headers, "", body, ""].join("\r\n"));

  test("an unreadable Date header gives the time it was received, the same on every parse, and says so", async () => {
    const raw = message(["From: Ada <ada@example.com>", "Date: Tomorrow at noon, probably", "Message-ID: <d-1@example.com>", "Subject: hi"]);
    const a = await parseInbound(raw, { receivedAt });
    const b = await parseInbound(raw, { receivedAt });
    expect(a.email.date).toBe(receivedAt.toISOString());
    expect(b.email.date).toBe(a.email.date);
    expect(a.email.date_source).toBe("received");
    expect(a.warnings).toEqual(['email: unreadable Date header "Tomorrow at noon, probably"; using the time it was received']);
    const readable = await parseInbound(message(["From: ada@example.com", "Date: Tue, 10 Mar 2026 09:15:02 +0100 (CET)"]), { receivedAt });
    expect(readable.email).toMatchObject({ date: "2026-03-10T08:15:02.000Z", date_source: "header" });
    expect(readable.warnings).toEqual([]);
  });

  test("raw 8-bit Latin-1 headers are decoded, not shown as U+FFFD; a UTF-8 header block is left as it is", async () => {
    const latin = iconv.encode(["From: Jörg Müller <jm@example.de>", "Subject: Grüße aus Köln – “Angebot”", "Date: Tue, 10 Mar 2026 09:15:02 +0100", "Content-Type: text/plain; charset=iso-8859-1", "Content-Transfer-Encoding: 8bit", "", "Schöne Grüße", ""].join("\r\n"), "windows-1252");
    const { email } = await parseInbound(latin, { receivedAt });
    expect(email.subject).toBe("Grüße aus Köln – “Angebot”");
    expect(email.from_name).toBe("Jörg Müller");
    expect(email.text).toBe("Schöne Grüße");
    const utf8 = await parseInbound(message(["From: Zoë <zoe@example.com>", "Subject: 日本語の件名"]), { receivedAt });
    expect([utf8.email.from_name, utf8.email.subject]).toEqual(["Zoë", "日本語の件名"]);
  });

  test("non-ASCII attachment names stay readable (sanitized for the file system) and the name as sent is an ingredient", async () => {
    const raw = Buffer.from(
      [
        "From: a@example.com",
        "Content-Type: multipart/mixed; boundary=b",
        "",
        "--b",
        "Content-Type: text/plain",
        "",
        "see attached",
        "--b",
        "Content-Type: text/plain; charset=utf-8",
        "Content-Disposition: attachment; filename*=UTF-8''%D0%BE%D1%82%D1%87%D1%91%D1%82.txt",
        "",
        "cyrillic",
        "--b",
        "Content-Type: application/pdf",
        "Content-Disposition: attachment; filename=\"=?UTF-8?B?5oql5ZGKOiAyMDI2LTAzLnBkZg==?=\"",
        "Content-Transfer-Encoding: base64",
        "",
        "aGVsbG8=",
        "--b",
        "Content-Type: text/plain",
        "Content-Disposition: attachment; filename=\"Café\u202Egnp.exe\"",
        "",
        "rlo",
        "--b--",
        "",
      ].join("\r\n"),
    );
    const { email } = await parseInbound(raw, { receivedAt });
    expect(email.attachments.map((a) => [a.filename, a.original_filename])).toEqual([
      ["отчёт.txt", "отчёт.txt"],
      ["报告_ 2026-03.pdf", "报告: 2026-03.pdf"],
      ["Café_gnp.exe", "Café\u202Egnp.exe"],
    ]);
  });

  test("a valid Message-ID with several @ is kept, not replaced by a generated one", async () => {
    for (const id of ['<"ada@home"@mail.example.com>', "<part1@part2@mail.example.com>"]) {
      const { email } = await parseInbound(message(["From: a@example.com", `Message-ID: ${id}`]), { receivedAt });
      expect(email.message_id).toBe(id);
    }
    const broken = await parseInbound(message(["From: a@example.com", "Message-ID: <no-at-sign>"]), { receivedAt });
    expect(broken.email.message_id).toMatch(/@whenthen\.generated>$/);
  });
});
