import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, test } from "vitest";
import { generatedMessageId, parseInbound } from "../../lib/mail/normalize";

const fixture = (name: string) => readFileSync(path.join(__dirname, "../../fixtures/inbound", name));
const receivedAt = new Date("2026-03-10T08:20:00.000Z");
const FIELDS = ["attachments", "cc", "date", "from", "from_name", "html", "message_id", "reply_to", "subject", "text", "text_first_line", "to"];

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
    expect(attached!.email.attachments).toEqual([{ filename: "INV-2026-0042.pdf", content_type: "application/pdf", size: 596, url: null }]);
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
