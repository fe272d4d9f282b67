import { afterAll, describe, expect, test } from "vitest";
import { http, HttpResponse } from "msw";
import { discordAction, discordConfigSchema } from "@/lib/actions/discord";
import { createActionContext, removeTempDirs, retryContext, type TestActionContext, failure } from "../helpers/action-context";
import { DISCORD_WEBHOOK, sentTo, server, useHttpMocks } from "../helpers/http";

useHttpMocks();
afterAll(removeTempDirs);

const run = (config: Record<string, unknown>, ctx: TestActionContext) => discordAction.run(discordConfigSchema.parse(config), ctx);

/** 4,500 characters: 45 numbered lines of 99 characters, each followed by "\n". */
const LONG = Array.from({ length: 45 }, (_, i) => `line ${String(i).padStart(2, "0")} ${"x".repeat(91)}`).join("\n") + "\n";

const contents = () => sentTo("discord").map((r) => (JSON.parse(r.body) as { content: string }).content);

describe("discord action", () => {
  test("AC14: 4,500 characters arrive as three messages in order, each at most 2,000, split on line breaks", async () => {
    expect(LONG.length).toBe(4500);
    const ctx = createActionContext();
    const result = await run({ webhook_url: DISCORD_WEBHOOK, content: LONG }, ctx);

    const sentContents = contents();
    expect(sentContents).toHaveLength(3);
    for (const c of sentContents) {
      expect(c.length).toBeLessThanOrEqual(2000);
      // Split on line breaks: every part starts at the beginning of a line.
      expect(c).toMatch(/^line \d\d /);
    }
    expect(sentContents.join("\n")).toBe(LONG);
    const firstLines = sentContents.map((c) => c.slice(0, 7));
    expect(firstLines[0]).toBe("line 00");
    expect(Number(firstLines[1]!.slice(5))).toBeLessThan(Number(firstLines[2]!.slice(5)));
    expect(result.output).toMatchObject({ status: "sent", chunks: 3, skipped: 0 });
    expect(ctx.savedProgress).toEqual([
      { sent: 1, chunks: 3 },
      { sent: 2, chunks: 3 },
      { sent: 3, chunks: 3 },
    ]);
  });

  test("AC14: parts go out at least one second apart on the injected clock", async () => {
    const ctx = createActionContext();
    const times: number[] = [];
    server.use(
      http.post(DISCORD_WEBHOOK, () => {
        times.push(ctx.clock.now().getTime());
        // Falls through to the shared Discord handler.
        return undefined;
      }),
    );
    await run({ webhook_url: DISCORD_WEBHOOK, content: LONG }, ctx);
    expect(times).toHaveLength(3);
    expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(1000);
    expect(times[2]! - times[1]!).toBeGreaterThanOrEqual(1000);
  });

  test("AC14: a 429 on part 2 is retryable with Discord's retry_after, and the retry resumes at part 2 without resending part 1", async () => {
    // Sees every request, including the refused one the shared handler never records.
    const all: string[] = [];
    server.use(
      http.post(DISCORD_WEBHOOK, async ({ request }) => {
        all.push((JSON.parse(await request.clone().text()) as { content: string }).content);
        if (all.length === 2) {
          return HttpResponse.json({ message: "You are being rate limited.", retry_after: 2.5, global: false }, { status: 429 });
        }
        return undefined;
      }),
    );
    const first = createActionContext();
    const err = await failure(run({ webhook_url: DISCORD_WEBHOOK, content: LONG }, first));
    expect(err.retryable).toBe(true);
    expect(err.retryAfterMs).toBe(2500);
    expect(err.message).toContain("part 2 of 3");
    expect(first.savedProgress).toEqual([{ sent: 1, chunks: 3 }]);

    const second = retryContext(first);
    const result = await run({ webhook_url: DISCORD_WEBHOOK, content: LONG }, second);
    expect(result.output).toMatchObject({ chunks: 3, skipped: 1 });

    // part 1, part 2 (refused with 429), part 2 again, part 3.
    expect(all).toHaveLength(4);
    expect(all[1]).toBe(all[2]);
    expect(all.filter((c) => c === all[0])).toHaveLength(1);
    expect([all[0], all[2], all[3]].join("\n")).toBe(LONG);
    expect(second.savedProgress).toEqual([
      { sent: 2, chunks: 3 },
      { sent: 3, chunks: 3 },
    ]);
  });

  test("progress saying every part was accepted sends nothing again", async () => {
    const ctx = createActionContext({ progress: { sent: 3, chunks: 3 } });
    const result = await run({ webhook_url: DISCORD_WEBHOOK, content: LONG }, ctx);
    expect(sentTo("discord")).toHaveLength(0);
    expect(result.output).toMatchObject({ chunks: 3, skipped: 3 });
  });

  test("unreadable progress, or a different number of parts, sends every part with a warning", async () => {
    const junk = createActionContext({ progress: { sent: "two" } });
    await run({ webhook_url: DISCORD_WEBHOOK, content: LONG }, junk);
    expect(sentTo("discord")).toHaveLength(3);
    expect(junk.warnings.join()).toMatch(/unreadable progress/);

    const changed = createActionContext({ progress: { sent: 1, chunks: 5 } });
    await run({ webhook_url: DISCORD_WEBHOOK, content: LONG }, changed);
    expect(sentTo("discord")).toHaveLength(6);
    expect(changed.warnings.join()).toMatch(/3 parts instead of 5/);
  });

  test("sends username, asks Discord to confirm with wait=true, and keeps the webhook's own query", async () => {
    const ctx = createActionContext();
    const result = await run({ webhook_url: `${DISCORD_WEBHOOK}?thread_id=77`, content: "hello", username: "whenthen" }, ctx);
    const [req] = sentTo("discord");
    const url = new URL(req!.url);
    expect(url.searchParams.get("wait")).toBe("true");
    expect(url.searchParams.get("thread_id")).toBe("77");
    expect(JSON.parse(req!.body)).toEqual({ content: "hello", username: "whenthen" });
    expect((result.output as { message_ids: string[] }).message_ids).toHaveLength(1);
  });

  test("other 4xx fail without retry; 5xx are retryable", async () => {
    server.use(http.post(DISCORD_WEBHOOK, () => HttpResponse.json({ message: "Unknown Webhook", code: 10015 }, { status: 404 })));
    const notFound = await failure(run({ webhook_url: DISCORD_WEBHOOK, content: "x" }, createActionContext()));
    expect(notFound.retryable).toBe(false);
    expect(notFound.message).toBe("discord: HTTP 404 — Unknown Webhook");

    const down = await failure(run({ webhook_url: "https://status.test/status/502", content: "x" }, createActionContext()));
    expect(down.retryable).toBe(true);
  });

  test("content that renders empty fails before anything is sent", async () => {
    expect(discordConfigSchema.safeParse({ webhook_url: DISCORD_WEBHOOK, content: "" }).success).toBe(false);
    const err = await failure(discordAction.run({ webhook_url: DISCORD_WEBHOOK, content: " \n " }, createActionContext()));
    expect(err.message).toBe('discord: "content" rendered to an empty string');
    expect(err.retryable).toBe(false);
    expect(sentTo("discord")).toHaveLength(0);
  });
});
