import { describe, expect, test } from "vitest";
import { renderMarkdown, messageIdFor, parseRecipients } from "../../lib/actions/email";
import { signedFilePath, verifyFileSignature } from "../../lib/files/signed-url";
import { selectStorable } from "../../lib/files/events";
import { recipientProblem } from "../../lib/mail/receiver";
import { emailConfigSchema, emailTrigger, matchesEmail } from "../../lib/triggers/email";

const email = { to: ["invoices@hooks.example"], from: "ada@example.com", from_name: "Ada Lovelace", subject: "Invoice INV-2026-0042 is ready" };
const cfg = (c: Record<string, unknown>) => emailConfigSchema.parse(c);

describe("email routing (matchesEmail)", () => {
  test("AC6: no rules match every message; every set rule must match", () => {
    expect(matchesEmail(cfg({}), email, ["anything@hooks.example"])).toBe(true);
    expect(matchesEmail(cfg({ to_alias: "invoices", from_contains: "lovelace", subject_regex: "^invoice inv-\\d+" }), email, ["invoices@hooks.example"])).toBe(true);
    expect(matchesEmail(cfg({ to_alias: "invoices", from_contains: "someone-else" }), email, ["invoices@hooks.example"])).toBe(false);
    expect(matchesEmail(cfg({ to_alias: "invoices", subject_regex: "^receipt" }), email, ["invoices@hooks.example"])).toBe(false);
  });

  test("AC6: to_alias uses the envelope when there is one, the To header otherwise", () => {
    expect(matchesEmail(cfg({ to_alias: "invoices" }), email, ["nobody@hooks.example"])).toBe(false);
    expect(matchesEmail(cfg({ to_alias: "invoices" }), { ...email, to: ["me@gmail.com"] }, ["Invoices@HOOKS.example"])).toBe(true);
    expect(matchesEmail(cfg({ to_alias: "invoices" }), email, [])).toBe(true);
    expect(matchesEmail(cfg({ to_alias: "invoices" }), email, ["invoices+march@hooks.example"])).toBe(true);
    expect(matchesEmail(cfg({ to_alias: "invoices" }), email, ["invoicesx@hooks.example"])).toBe(false);
    expect(matchesEmail(cfg({ to_alias: "inv+vip" }), email, ["inv+vip@hooks.example"])).toBe(true);
    expect(matchesEmail(cfg({ to_alias: "inv+vip" }), email, ["inv+vip2@hooks.example"])).toBe(false);
  });

  test("AC6: the config is strict, blank fields mean unset, and dangerous or broken regexes are refused", () => {
    expect(cfg({ to_alias: "", from_contains: " ", subject_regex: "" })).toEqual({});
    expect(cfg({ to_alias: " Invoices " })).toEqual({ to_alias: "invoices" });
    for (const bad of [{ unknown: 1 }, { to_alias: "a@b" }, { to_alias: "x".repeat(65) }, { subject_regex: "(" }, { subject_regex: "(a+)+$" }, { subject_regex: "(\\w*\\s?)*x" }, { subject_regex: "(x+){2,}" }, { subject_regex: "(a)\\1" }, { subject_regex: "a".repeat(201) }]) {
      expect(emailConfigSchema.safeParse(bad).success, JSON.stringify(bad)).toBe(false);
    }
    expect(emailConfigSchema.safeParse({ subject_regex: "^(invoice|receipt) [A-Z]+-\\d{4}" }).success).toBe(true);
    expect(emailTrigger.ingredients.map((i) => i.name)).toEqual(expect.arrayContaining(["from", "from_name", "to", "cc", "subject", "text", "html", "date", "message_id", "attachments", "text_first_line"]));
  });
});

describe("inbound recipients (never a relay)", () => {
  test("AC6: only plain local parts at exactly INBOUND_DOMAIN are accepted", () => {
    expect(recipientProblem("invoices@hooks.example", "hooks.example")).toBeNull();
    expect(recipientProblem("Invoices+x@HOOKS.EXAMPLE", "hooks.example")).toBeNull();
    for (const bad of ["victim@gmail.com", "victim%gmail.com@hooks.example", "gmail.com!victim@hooks.example", "x@hooks.example.evil.com", "x@evilhooks.example", "x@[127.0.0.1]", `${"a".repeat(65)}@hooks.example`, "hooks.example", '"a@b"@hooks.example', ".a@hooks.example"]) {
      expect(recipientProblem(bad, "hooks.example"), bad).not.toBeNull();
    }
  });
});

describe("signed file links and storage limits", () => {
  const now = new Date("2026-03-10T08:20:00Z");
  test("AC6: a link verifies until exp, and not for another file, event or expiry", () => {
    const url = new URL(signedFilePath("secret", "ev-1", "a.pdf", now), "http://x");
    const exp = url.searchParams.get("exp");
    const sig = url.searchParams.get("sig");
    expect(verifyFileSignature("secret", "ev-1", "a.pdf", exp, sig, now)).toBe("ok");
    expect(verifyFileSignature("secret", "ev-1", "a.pdf", exp, sig, new Date(now.getTime() + 24 * 3600_000))).toBe("expired");
    expect(verifyFileSignature("secret", "ev-1", "b.pdf", exp, sig, now)).toBe("bad");
    expect(verifyFileSignature("secret", "ev-2", "a.pdf", exp, sig, now)).toBe("bad");
    expect(verifyFileSignature("other", "ev-1", "a.pdf", exp, sig, now)).toBe("bad");
    expect(verifyFileSignature("secret", "ev-1", "a.pdf", String(Number(exp) + 1), sig, now)).toBe("bad");
    expect(verifyFileSignature("secret", "ev-1", "a.pdf", null, sig, now)).toBe("bad");
  });

  test("AC6: attachments over 5 MB, or past 20 MB per message, are not stored", () => {
    const MB = 1024 * 1024;
    expect(selectStorable([1 * MB, 6 * MB, 5 * MB, 5 * MB, 5 * MB, 4.5 * MB, 1 * MB, 4 * MB])).toEqual([true, false, true, true, true, false, true, false]);
  });
});

describe("email action helpers", () => {
  test("AC19: recipients parse with display names and commas in quotes; Message-ID is stable and safe", () => {
    const r = parseRecipients('"Doe, Jane" <jane@example.org>, me@example.com');
    expect(r).toEqual({ ok: true, recipients: [{ name: "Doe, Jane", address: "jane@example.org" }, { name: "", address: "me@example.com" }] });
    expect(parseRecipients("Friends: a@example.com, b@example.com;").ok).toBe(false);
    expect(messageIdFor("ev-1:0", "Automations <bot@auto.example.com>")).toBe("<ev-1.0@auto.example.com>");
    expect(messageIdFor("ev-1:0", "automations@localhost")).toBe("<ev-1.0@localhost>");
    expect(messageIdFor("<x>\r\n:1", "nonsense")).toBe("<x.1@whenthen.localhost>");
  });

  test("AC19: markdown renders to HTML with raw HTML escaped", () => {
    expect(renderMarkdown("**hi** <script>alert(1)</script>")).toContain("<strong>hi</strong> &lt;script&gt;");
  });
});
