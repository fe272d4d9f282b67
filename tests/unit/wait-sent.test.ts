import { createElement } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, test } from "vitest";
import { RunJournal } from "@/components/RunJournal";
import type { Step } from "@/lib/executor/types";
import { waitSummary } from "@/lib/executor/wait";
import { parkedWaitStatus } from "@/lib/ui/run-journal";
import { recipientWords, sentLinks, sentToWords } from "@/lib/waits/sent";
import { waitLinks } from "@/lib/waits/links";

const now = new Date("2026-03-07T14:30:00.000Z");
const links = waitLinks("https://when.example.org", "a-secret-of-thirty-two-characters", "run-1", 0);

const entry = (over: Partial<Step>): Step => ({ kind: "action", name: "email", status: "succeeded", attempt: 1, warnings: [], logs: [], started_at: "2026-03-07T13:02:00.000Z", duration_ms: 400, ...over });

describe("where a wait's links were sent", () => {
  test("a step that rendered the wait's link into what it sent is found, with its recipient and when it finished", () => {
    const steps = [
      entry({ id: "note", name: "slack", input: { webhook_url: "[redacted]", text: "nothing to approve" } }),
      entry({ id: "ask", input: { to: "ops@example.com", subject: "Approve?", body_markdown: `Approve: ${links.approve_url}\nDeny: ${links.deny_url}` } }),
    ];
    expect(sentLinks(steps, links.resume_url)).toEqual([{ to: "ops@example.com", at: "2026-03-07T13:02:00.400Z" }]);
  });

  test("approval buttons count; a failed or skipped step, another wait's links, and steps before an earlier wait do not", () => {
    const other = waitLinks("https://when.example.org", "a-secret-of-thirty-two-characters", "run-1", 1);
    const steps = [
      entry({ id: "before", input: { to: "early@example.com", body_markdown: links.approve_url } }),
      entry({ id: "first_wait", kind: "wait", name: "delay" }),
      entry({ id: "failed", status: "failed", input: { to: "a@example.com", body_markdown: other.approve_url } }),
      entry({ id: "skipped", status: "skipped", input: { to: "b@example.com", body_markdown: other.approve_url } }),
      entry({ id: "mismatch", input: { to: "c@example.com", body_markdown: links.approve_url } }),
      entry({ id: "pushover", name: "push", input: { provider: "pushover", message: "x", approval_buttons: true } }),
      entry({ id: "tg", name: "telegram", input: { bot_token: "[redacted]", chat_id: "-1001234567890", text: "Approve?", approval_buttons: true }, started_at: "2026-03-07T13:05:00.000Z", duration_ms: 0 }),
    ];
    expect(sentLinks(steps, other.resume_url)).toEqual([{ to: "Telegram chat -1001234567890", at: "2026-03-07T13:05:00.000Z" }]);
  });

  test("recipients in words: addresses shortened, a webhook URL never shown, a redacted value left out", () => {
    expect(recipientWords("email", { to: "Ops <ops@example.com>, a@example.com; b@example.com" })).toBe("ops@example.com and 2 others");
    expect(recipientWords("email", { to: "someone.with.a.very.long.name@department.example.co.uk" })).toBe("someone.with.a.very.long.name@departmen…");
    expect(recipientWords("slack", { webhook_url: "https://hooks.slack.com/services/T0/B0/XXXX", text: "x" })).toBe("Slack");
    expect(recipientWords("discord", { webhook_url: "https://discord.com/api/webhooks/1/abc", content: "x" })).toBe("Discord");
    expect(recipientWords("telegram", { chat_id: "@ops_channel" })).toBe("Telegram @ops_channel");
    expect(recipientWords("telegram", { chat_id: "[redacted]" })).toBe("Telegram");
    expect(recipientWords("push", { provider: "ntfy", topic: "ops-approvals" })).toBe("ntfy topic ops-approvals");
    expect(recipientWords("push", { provider: "pushover" })).toBe("Pushover");
    expect(recipientWords("http", { url: "https://api.example.com/hook?token=abc" })).toBe("api.example.com");
    expect(sentToWords([{ to: "a" }, { to: "b" }, { to: "a" }])).toBe("a and b");
    expect(sentToWords([{ to: "a" }, { to: "b" }, { to: "c" }, { to: "d" }, { to: "e" }])).toBe("a, b and 3 more");
  });

  test("the run log's words: sent to whom and when, then the timeout; another day's time with its date", () => {
    const sent = [{ to: "ops@example.com", at: "2026-03-07T13:02:00.400Z" }];
    expect(waitSummary({ kind: "for_approval", detail: { timezone: "Europe/Berlin", sent }, timeoutAt: "2026-03-07T15:02:00.000Z" }, now)).toBe(
      "waiting for approval — sent to ops@example.com at 14:02, times out 16:02",
    );
    expect(waitSummary({ kind: "for_approval", detail: { timezone: "UTC", sent: [...sent, { to: "Slack", at: "2026-03-06T23:59:00.000Z" }] }, timeoutAt: null }, now)).toBe(
      "waiting for approval — sent to ops@example.com and Slack at 13:02",
    );
    expect(waitSummary({ kind: "for_call", detail: { timezone: "UTC", sent: [{ to: "Discord", at: "2026-03-06T20:00:00.000Z" }] }, timeoutAt: "2026-03-08T20:00:00.000Z" }, now)).toBe(
      "waiting for a call to its resume URL — sent to Discord at 2026-03-06 20:00, times out 2026-03-08 20:00",
    );
    // What a database hands back is read defensively: a bad entry is left out.
    expect(waitSummary({ kind: "for_approval", detail: { timezone: "UTC", sent: [{ to: 3 }, "x"] }, timeoutAt: null }, now)).toBe("waiting for approval");
  });
});

describe("the run page's journal for a run parked at a wait", () => {
  const steps: Step[] = [
    entry({ id: "ask", input: { to: "ops@example.com" }, output: { sent: true } }),
    entry({ id: "approval", kind: "wait", name: "for_approval", status: "running", decision: "waiting", why: "waiting for approval — sent to ops@example.com at 13:02, times out 16:02", started_at: "2026-03-07T13:02:01.000Z", duration_ms: 0 }),
  ];

  test("the parked wait reads waiting with what it waits for, not running, and not as if it ran", () => {
    expect(parkedWaitStatus(steps[1]!, "waiting")).toBe("waiting");
    expect(parkedWaitStatus(steps[1]!, "cancelled")).toBe("cancelled");
    expect(parkedWaitStatus(steps[0]!, "waiting")).toBeNull();
    expect(parkedWaitStatus({ kind: "wait", status: "succeeded", decision: "approved" }, "succeeded")).toBeNull();

    const html = renderToStaticMarkup(createElement(RunJournal, { steps, runAttempt: 1, runStatus: "waiting" }));
    const row = html.slice(html.indexOf('data-testid="step-2"'));
    expect(row).toContain('data-testid="step-2-status"');
    expect(/data-testid="step-2-status"[^>]*>([^<]*)</.exec(row)?.[1]).toBe("waiting");
    expect(row).toContain("Waiting for approval — sent to ops@example.com at 13:02, times out 16:02");
    expect(row).not.toContain("Ran: ");
    expect(row).not.toMatch(/>running</);
    expect(/data-testid="step-1-status"[^>]*>([^<]*)</.exec(html)?.[1]).toBe("succeeded");
  });

  test("a run cancelled while it waited shows its wait cancelled", () => {
    const html = renderToStaticMarkup(createElement(RunJournal, { steps, runAttempt: 1, runStatus: "cancelled" }));
    expect(/data-testid="step-2-status"[^>]*>([^<]*)</.exec(html)?.[1]).toBe("cancelled");
    expect(html).toContain("Cancelled while waiting for approval");
  });
});
