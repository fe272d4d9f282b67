import { afterAll, describe, expect, test } from "vitest";
import { http, HttpResponse } from "msw";
import { slackAction, slackConfigSchema } from "@/lib/actions/slack";
import { createActionContext, removeTempDirs, failure } from "../helpers/action-context";
import { SLACK_WEBHOOK, sentTo, server, useHttpMocks } from "../helpers/http";

useHttpMocks();
afterAll(removeTempDirs);

/** Validates like the executor does (the rendered config through the schema), then runs. */
async function run(config: Record<string, unknown>, ctx = createActionContext()) {
  return slackAction.run(slackConfigSchema.parse(config), ctx);
}

describe("slack action", () => {
  test("posts the text as JSON to the webhook and returns Slack's ok", async () => {
    const result = await run({ webhook_url: SLACK_WEBHOOK, text: "Build *passed*" });
    expect(result.output).toEqual({ status: 200, response: "ok" });
    const [req] = sentTo("slack");
    expect(req?.headers["content-type"]).toBe("application/json");
    expect(JSON.parse(req!.body)).toEqual({ text: "Build *passed*" });
  });

  test("blocks given as a JSON string or an array are sent as an array", async () => {
    const blocks = [{ type: "section", text: { type: "mrkdwn", text: "*Hi*" } }];
    await run({ webhook_url: SLACK_WEBHOOK, text: "Hi", blocks: JSON.stringify(blocks) });
    await run({ webhook_url: SLACK_WEBHOOK, text: "Hi", blocks });
    expect(sentTo("slack").map((r) => JSON.parse(r.body))).toEqual([
      { text: "Hi", blocks },
      { text: "Hi", blocks },
    ]);
  });

  test("an empty blocks value sends no blocks; non-array blocks are refused on save", async () => {
    await run({ webhook_url: SLACK_WEBHOOK, text: "Hi", blocks: "" });
    expect(JSON.parse(sentTo("slack")[0]!.body)).toEqual({ text: "Hi" });
    expect(slackConfigSchema.safeParse({ webhook_url: SLACK_WEBHOOK, text: "x", blocks: '{"type":"section"}' }).success).toBe(false);
    expect(slackConfigSchema.safeParse({ webhook_url: SLACK_WEBHOOK, text: "x", blocks: "[1, 2]" }).success).toBe(false);
    // A template is only JSON once rendered: accepted on save, checked again before sending.
    expect(slackConfigSchema.safeParse({ webhook_url: SLACK_WEBHOOK, text: "x", blocks: "{{vars.blocks}}" }).success).toBe(true);
    const err = await failure(run({ webhook_url: SLACK_WEBHOOK, text: "x", blocks: "{{not json" }));
    expect(err.retryable).toBe(false);
    expect(err.message).toMatch(/slack: "blocks" must be a JSON array/);
    expect(sentTo("slack")).toHaveLength(1);
  });

  test("text that renders to an empty string fails without posting", async () => {
    const parsed = slackConfigSchema.safeParse({ webhook_url: SLACK_WEBHOOK, text: "  " });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0]?.message).toMatch(/slack: "text" is empty/);
    const err = await failure(slackAction.run({ webhook_url: SLACK_WEBHOOK, text: "" }, createActionContext()));
    expect(err.message).toBe('slack: "text" rendered to an empty string');
    expect(err.retryable).toBe(false);
    expect(sentTo("slack")).toHaveLength(0);
  });

  test("the webhook URL must be http(s); a template passes on save and is checked once rendered", async () => {
    expect(slackConfigSchema.safeParse({ webhook_url: "file:///etc/passwd", text: "x" }).success).toBe(false);
    expect(slackConfigSchema.safeParse({ webhook_url: "not a url", text: "x" }).success).toBe(false);
    expect(slackConfigSchema.safeParse({ webhook_url: "{{secrets.SLACK_WEBHOOK}}", text: "x" }).success).toBe(true);
    const err = await failure(slackAction.run({ webhook_url: "ftp://example.com/hook", text: "x" }, createActionContext()));
    expect(err.retryable).toBe(false);
    expect(err.message).toMatch(/"webhook_url" must be an http\(s\) URL/);
  });

  test("parsing is idempotent: a parsed config (blocks as an array) parses to itself", () => {
    const once = slackConfigSchema.parse({ webhook_url: SLACK_WEBHOOK, text: "x", blocks: '[{"type":"divider"}]' });
    expect(once.blocks).toEqual([{ type: "divider" }]);
    expect(slackConfigSchema.parse(once)).toEqual(once);
  });

  test("unknown config keys are refused", () => {
    const parsed = slackConfigSchema.safeParse({ webhook_url: SLACK_WEBHOOK, text: "x", channel: "#general" });
    expect(parsed.success).toBe(false);
    expect(JSON.stringify(parsed.error?.issues)).toContain("channel");
  });

  test("Slack's 4xx error codes fail without retry and keep the answer", async () => {
    server.use(http.post(SLACK_WEBHOOK, () => new HttpResponse("no_service", { status: 404 })));
    const err = await failure(run({ webhook_url: SLACK_WEBHOOK, text: "x" }));
    expect(err.retryable).toBe(false);
    expect(err.message).toBe("slack: HTTP 404 — no_service");
    expect(err.output).toEqual({ status: 404, body: "no_service" });

    server.use(http.post(SLACK_WEBHOOK, () => new HttpResponse("invalid_payload", { status: 400 })));
    expect((await failure(run({ webhook_url: SLACK_WEBHOOK, text: "x" }))).retryable).toBe(false);
  });

  test("a 2xx answer that is not ok is a failure", async () => {
    server.use(http.post(SLACK_WEBHOOK, () => new HttpResponse("<html>login</html>", { status: 200 })));
    const err = await failure(run({ webhook_url: SLACK_WEBHOOK, text: "x" }));
    expect(err.retryable).toBe(false);
    expect(err.message).toContain('without "ok"');
  });

  test("5xx is retryable", async () => {
    const err = await failure(run({ webhook_url: "https://status.test/status/503", text: "x" }));
    expect(err.retryable).toBe(true);
    expect(err.message).toBe("slack: HTTP 503 — status 503");
  });

  test("429 is retryable and honours Retry-After in seconds or as a date", async () => {
    const seconds = await failure(run({ webhook_url: "https://status.test/status/429?retry_after=30", text: "x" }));
    expect(seconds.retryable).toBe(true);
    expect(seconds.retryAfterMs).toBe(30_000);

    const ctx = createActionContext();
    const at = new Date(ctx.clock.now().getTime() + 90_000).toUTCString();
    const date = await failure(run({ webhook_url: `https://status.test/status/429?retry_after=${encodeURIComponent(at)}`, text: "x" }, ctx));
    expect(date.retryAfterMs).toBe(90_000);
  });

  test("a network error from ctx.http passes through as a retryable ActionError", async () => {
    server.use(http.post(SLACK_WEBHOOK, () => HttpResponse.error()));
    const err = await failure(run({ webhook_url: SLACK_WEBHOOK, text: "x" }));
    expect(err.retryable).toBe(true);
  });
});
