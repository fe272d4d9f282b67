import { http, HttpResponse } from "msw";
import { afterAll, beforeEach, describe, expect, test } from "vitest";
import { pushAction, pushConfigSchema } from "@/lib/actions/push";
import { slackAction, slackConfigSchema } from "@/lib/actions/slack";
import { TELEGRAM_API, telegramAction, telegramConfigSchema } from "@/lib/actions/telegram";
import { actionRegistry } from "@/lib/actions";
import { checkDefinition } from "@/lib/definition";
import { fieldsOf } from "@/lib/plugin";
import { createActionContext, failure, removeTempDirs, type TestActionContext } from "../helpers/action-context";
import { SLACK_WEBHOOK, sentTo, server, useHttpMocks } from "../helpers/http";

/**
 * `approval_buttons` on Slack, Telegram and ntfy: the message carries an Approve and a Deny button
 * that open the run's approval links (each service's own link buttons, mocked at its boundary with
 * msw and the exact payload asserted); saving refuses the option unless a for_approval wait follows.
 */
useHttpMocks();
afterAll(removeTempDirs);

const LINKS = {
  approve_url: "https://when.example.org/api/waits/run-1/0/mac0123456789abcdefghijklmnopqrst/approve",
  deny_url: "https://when.example.org/api/waits/run-1/0/mac0123456789abcdefghijklmnopqrst/deny",
};
const withLinks = (): TestActionContext => ({ ...createActionContext(), waitLinks: () => LINKS });
const json = (body: string) => JSON.parse(body) as Record<string, unknown>;

describe("Slack: Block Kit link buttons", () => {
  test("the text becomes a section and an actions block with two URL buttons follows it", async () => {
    await slackAction.run(slackConfigSchema.parse({ webhook_url: SLACK_WEBHOOK, text: "Post the *draft*?", approval_buttons: true }), withLinks());
    expect(json(sentTo("slack")[0]!.body)).toEqual({
      text: "Post the *draft*?",
      blocks: [
        { type: "section", text: { type: "mrkdwn", text: "Post the *draft*?" } },
        {
          type: "actions",
          block_id: "whenthen_approval",
          elements: [
            { type: "button", action_id: "approve", text: { type: "plain_text", text: "Approve" }, style: "primary", url: LINKS.approve_url },
            { type: "button", action_id: "deny", text: { type: "plain_text", text: "Deny" }, style: "danger", url: LINKS.deny_url },
          ],
        },
      ],
    });
  });

  test("the applet's own blocks come first, the buttons after them; off, nothing changes", async () => {
    const own = [{ type: "header", text: { type: "plain_text", text: "Draft" } }];
    await slackAction.run(slackConfigSchema.parse({ webhook_url: SLACK_WEBHOOK, text: "x", blocks: own, approval_buttons: true }), withLinks());
    await slackAction.run(slackConfigSchema.parse({ webhook_url: SLACK_WEBHOOK, text: "x", approval_buttons: false }), withLinks());
    const [first, second] = sentTo("slack").map((r) => json(r.body));
    expect((first!.blocks as unknown[]).slice(0, 1)).toEqual(own);
    expect((first!.blocks as { type: string }[]).map((b) => b.type)).toEqual(["header", "actions"]);
    expect(second).toEqual({ text: "x" });
  });

  test("a long text is split into sections of at most 3,000 characters", async () => {
    const text = Array.from({ length: 70 }, (_, i) => `line ${i} ${"y".repeat(90)}`).join("\n");
    await slackAction.run(slackConfigSchema.parse({ webhook_url: SLACK_WEBHOOK, text, approval_buttons: true }), withLinks());
    const blocks = json(sentTo("slack")[0]!.body).blocks as { type: string; text?: { text: string } }[];
    const sections = blocks.filter((b) => b.type === "section");
    expect(sections.length).toBeGreaterThan(2);
    expect(sections.every((b) => b.text!.text.length <= 3000)).toBe(true);
    expect(sections.map((b) => b.text!.text).join("\n")).toBe(text);
    expect(blocks.at(-1)!.type).toBe("actions");
  });

  test("without approval links (a dry run) the message goes without buttons and the step says so", async () => {
    const ctx = createActionContext();
    await slackAction.run(slackConfigSchema.parse({ webhook_url: SLACK_WEBHOOK, text: "x", approval_buttons: true }), ctx);
    expect(json(sentTo("slack")[0]!.body)).toEqual({ text: "x" });
    expect(ctx.warnings).toEqual(["slack: this run has no approval links here, so the message went without its Approve and Deny buttons"]);
  });
});

describe("Telegram: an inline keyboard of URL buttons", () => {
  const TOKEN = "7123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw";
  let bodies: Record<string, unknown>[] = [];
  beforeEach(() => {
    bodies = [];
    server.use(
      http.post(`${TELEGRAM_API}/:bot/sendMessage`, async ({ request }) => {
        const body = (await request.json()) as Record<string, unknown>;
        bodies.push(body);
        // Like Telegram: a button to a host it cannot reach is refused.
        const markup = JSON.stringify(body.reply_markup ?? "");
        if (markup.includes("localhost")) return HttpResponse.json({ ok: false, error_code: 400, description: "Bad Request: BUTTON_URL_INVALID" }, { status: 400 });
        return HttpResponse.json({ ok: true, result: { message_id: bodies.length } });
      }),
    );
  });

  test("reply_markup carries Approve and Deny as url buttons in one row", async () => {
    await telegramAction.run(telegramConfigSchema.parse({ bot_token: TOKEN, chat_id: "123456789", text: "Post the draft?", approval_buttons: true }), withLinks());
    expect(bodies).toEqual([
      {
        chat_id: "123456789",
        text: "Post the draft?",
        reply_markup: { inline_keyboard: [[{ text: "Approve", url: LINKS.approve_url }, { text: "Deny", url: LINKS.deny_url }]] },
      },
    ]);
  });

  test("a message sent in parts has its buttons under the last part only", async () => {
    const text = Array.from({ length: 60 }, (_, i) => `line ${i} ${"z".repeat(95)}`).join("\n");
    await telegramAction.run(telegramConfigSchema.parse({ bot_token: TOKEN, chat_id: "123456789", text, approval_buttons: true }), withLinks());
    expect(bodies.length).toBe(2);
    expect(bodies[0]!.reply_markup).toBeUndefined();
    expect(bodies[1]!.reply_markup).toEqual({ inline_keyboard: [[{ text: "Approve", url: LINKS.approve_url }, { text: "Deny", url: LINKS.deny_url }]] });
  });

  test("Telegram refusing the button links says PUBLIC_URL must be a public address", async () => {
    const local = { approve_url: "http://localhost:3000/api/waits/r/0/m/approve", deny_url: "http://localhost:3000/api/waits/r/0/m/deny" };
    const err = await failure(telegramAction.run(telegramConfigSchema.parse({ bot_token: TOKEN, chat_id: "123456789", text: "x", approval_buttons: true }), { ...createActionContext(), waitLinks: () => local }));
    expect(err.retryable).toBe(false);
    expect(err.message).toContain("PUBLIC_URL must be one (not localhost or a LAN address)");
  });
});

describe("ntfy: view actions", () => {
  test("the JSON publish carries two view actions that open the links and clear the notification", async () => {
    await pushAction.run(pushConfigSchema.parse({ provider: "ntfy", topic: "ops-approvals", message: "Post the draft?", approval_buttons: true }), withLinks());
    expect(json(sentTo("ntfy")[0]!.body)).toEqual({
      topic: "ops-approvals",
      message: "Post the draft?",
      actions: [
        { action: "view", label: "Approve", url: LINKS.approve_url, clear: true },
        { action: "view", label: "Deny", url: LINKS.deny_url, clear: true },
      ],
    });
  });

  test("the field shows only for ntfy in the editor; Pushover's leftover copy is ignored, as its other ntfy fields are", () => {
    const f = fieldsOf(pushConfigSchema).find((x) => x.name === "approval_buttons");
    expect(f).toMatchObject({ kind: "boolean", label: "Approve and Deny buttons", showWhen: { field: "provider", equals: ["ntfy"] } });
    expect(pushConfigSchema.safeParse({ provider: "pushover", message: "m", approval_buttons: true }).success).toBe(true);
  });
});

describe("saving an applet with approval buttons", () => {
  const ask = (type: string, config: Record<string, unknown>) => ({ id: "ask", type, config: { ...config, approval_buttons: true } });
  const slack = { webhook_url: SLACK_WEBHOOK, text: "Post the draft?" };
  const approval = { id: "approval", type: "wait", kind: "for_approval", timeout: "2h" };
  const post = { id: "post", type: "http", config: { url: "https://example.com/post" } };
  const def = (steps: unknown[]) => ({ version: 2, trigger: { type: "webhook", config: {} }, steps });
  const problems = (steps: unknown[]) => {
    const r = checkDefinition(def(steps));
    return r.ok ? [] : r.problems;
  };

  test("the three actions with a for_approval wait after them save", () => {
    expect(problems([ask("slack", slack), approval, post])).toEqual([]);
    expect(problems([ask("telegram", { bot_token: "{{secrets.TG}}", chat_id: "123456789", text: "x" }), approval])).toEqual([]);
    expect(problems([ask("push", { provider: "ntfy", topic: "t", message: "x" }), approval])).toEqual([]);
    // The wait may sit in a branch that follows, or after the if the asking step is in.
    expect(problems([{ id: "check", type: "if", conditions: { all: [{ field: "trigger.body.x", op: "exists" }] }, then: [ask("slack", slack)] }, approval])).toEqual([]);
    expect(problems([ask("slack", slack), { id: "maybe", type: "if", conditions: { all: [{ field: "trigger.body.x", op: "exists" }] }, then: [approval] }])).toEqual([]);
  });

  test("without a for_approval wait after the step, saving is refused naming the field", () => {
    expect(problems([ask("slack", slack), post])).toEqual([
      { path: "steps.0.config.approval_buttons", message: "needs a for_approval wait after this step: the Approve and Deny buttons open that wait's approval page. Add the wait, or turn the buttons off" },
    ]);
    // The wait before the step is not the one its links name.
    expect(problems([approval, post, ask("telegram", { bot_token: "{{secrets.TG}}", chat_id: "123456789", text: "x" })]).map((p) => p.path)).toEqual(["steps.2.config.approval_buttons"]);
    // Inside a wait's on_deny the run ends after the list: the outer steps do not follow.
    const nested = problems([{ ...approval, on_deny: [ask("push", { provider: "ntfy", topic: "t", message: "x" })] }, { ...approval, id: "again" }]);
    expect(nested.map((p) => p.path)).toEqual(["steps.0.on_deny.0.config.approval_buttons"]);
  });

  test("another kind of wait in the way takes the links: refused, naming it", () => {
    expect(problems([ask("slack", slack), { id: "pause", type: "wait", kind: "delay", duration: "1h" }, approval])).toEqual([
      { path: "steps.0.config.approval_buttons", message: "the next wait after this step is steps.1 (a delay wait), so the buttons would open its links; put a for_approval wait before it, or turn the buttons off" },
    ]);
  });

  test("Pushover's ignored copy needs no wait; every plug-in that offers the option names it the same", () => {
    expect(problems([ask("push", { provider: "pushover", message: "x" })])).toEqual([]);
    const offering = [...actionRegistry.values()].filter((p) => fieldsOf(p.configSchema).some((f) => f.name === "approval_buttons")).map((p) => p.type);
    expect(offering.sort()).toEqual(["push", "slack", "telegram"]);
  });
});
