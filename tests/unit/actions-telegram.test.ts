import { http, HttpResponse } from "msw";
import { afterAll, afterEach, beforeEach, describe, expect, test } from "vitest";
import { checkDefinition } from "@/lib/definition";
import { TELEGRAM_API, telegramAction, telegramConfigSchema } from "@/lib/actions/telegram";
import { createLogger } from "@/lib/core/log";
import { createActionContext, failure, removeTempDirs, retryContext, type TestActionContext } from "../helpers/action-context";
import { createTestApp } from "../helpers/db";
import { server, useHttpMocks } from "../helpers/http";
import { startWorker } from "../helpers/worker";
import { sqliteOf } from "@/lib/db/store/sqlite";

/**
 * The telegram action against a stand-in for the Bot API (msw at its boundary): sendMessage's
 * JSON, its `{ ok, result }` / `{ ok: false, error_code, description, parameters }` answers, the
 * 4,096-character cap, 429 with `parameters.retry_after`, and the token in the URL path.
 */
useHttpMocks();
afterAll(removeTempDirs);

const TOKEN = "7123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw";
const CHAT = "123456789";

interface Received {
  token: string;
  body: Record<string, unknown>;
}
let received: Received[] = [];
let nextId = 500;

/** Like the real API: a known bot and chat get a message id; text over 4,096 characters is refused. */
const botApi = http.post(`${TELEGRAM_API}/:bot/sendMessage`, async ({ request, params }) => {
  const token = String(params.bot).replace(/^bot/, "");
  const body = (await request.json()) as Record<string, unknown>;
  received.push({ token, body });
  if (token !== TOKEN) return HttpResponse.json({ ok: false, error_code: 401, description: "Unauthorized" }, { status: 401 });
  if (body.chat_id !== CHAT) return HttpResponse.json({ ok: false, error_code: 400, description: "Bad Request: chat not found" }, { status: 400 });
  if (typeof body.text !== "string" || body.text.length === 0 || body.text.length > 4096) {
    return HttpResponse.json({ ok: false, error_code: 400, description: "Bad Request: message is too long" }, { status: 400 });
  }
  return HttpResponse.json({ ok: true, result: { message_id: nextId++, chat: { id: Number(CHAT), type: "private" }, text: body.text } });
});

beforeEach(() => {
  received = [];
  server.use(botApi);
});

const run = (config: Record<string, unknown>, ctx: TestActionContext) => telegramAction.run(telegramConfigSchema.parse(config), ctx);
const config = (over: Record<string, unknown> = {}) => ({ bot_token: TOKEN, chat_id: CHAT, text: "Order #1042 paid", ...over });

/** 9,000 characters: 90 numbered lines of 99 characters, each followed by "\n". */
const LONG = Array.from({ length: 90 }, (_, i) => `line ${String(i).padStart(2, "0")} ${"x".repeat(91)}`).join("\n") + "\n";

describe("telegram action", () => {
  test("sendMessage gets chat_id, text, parse_mode and disable_notification at /bot<token>/sendMessage", async () => {
    const ctx = createActionContext();
    const result = await run(config({ parse_mode: "HTML", disable_notification: true, text: "<b>paid</b>" }), ctx);
    expect(received).toEqual([{ token: TOKEN, body: { chat_id: CHAT, text: "<b>paid</b>", parse_mode: "HTML", disable_notification: true } }]);
    expect(result.output).toMatchObject({ status: "sent", chunks: 1, skipped: 0 });
    expect((result.output as { message_ids: number[] }).message_ids).toHaveLength(1);
  });

  test("the plain form sends neither parse_mode nor disable_notification", async () => {
    await run(config({ parse_mode: "", disable_notification: false }), createActionContext());
    expect(received[0]!.body).toEqual({ chat_id: CHAT, text: "Order #1042 paid" });
  });

  test("the rendered bot token is registered as a secret of the run before the first request", async () => {
    const ctx = createActionContext();
    server.use(http.post(`${TELEGRAM_API}/:bot/sendMessage`, () => HttpResponse.error()));
    const err = await failure(run(config(), ctx));
    expect(ctx.secrets).toEqual([TOKEN]);
    // The network error names the URL, token and all; the run's redactor removes it.
    expect(err.retryable).toBe(true);
    expect(ctx.redact(err.message)).not.toContain(TOKEN);
    expect(ctx.redact(err.message)).not.toContain(TOKEN.split(":")[1]);
  });

  test("9,000 characters arrive as three messages in order, each at most 4,096, split on line breaks, one second apart", async () => {
    const ctx = createActionContext();
    const times: number[] = [];
    server.use(
      http.post(`${TELEGRAM_API}/:bot/sendMessage`, () => {
        times.push(ctx.clock.now().getTime());
        return undefined;
      }),
    );
    const result = await run(config({ text: LONG }), ctx);
    const texts = received.map((r) => r.body.text as string);
    expect(texts).toHaveLength(3);
    for (const t of texts) {
      expect(t.length).toBeLessThanOrEqual(4096);
      expect(t).toMatch(/^line \d\d /);
    }
    expect(texts.join("\n")).toBe(LONG);
    expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(1000);
    expect(result.output).toMatchObject({ status: "sent", chunks: 3, skipped: 0 });
    expect(ctx.savedProgress).toEqual([
      { sent: 1, chunks: 3 },
      { sent: 2, chunks: 3 },
      { sent: 3, chunks: 3 },
    ]);
  });

  test("a 429 with parameters.retry_after is retryable after that many seconds, and the retry resumes at the refused part", async () => {
    let calls = 0;
    server.use(
      http.post(`${TELEGRAM_API}/:bot/sendMessage`, () => {
        calls++;
        if (calls === 2) {
          return HttpResponse.json({ ok: false, error_code: 429, description: "Too Many Requests: retry after 7", parameters: { retry_after: 7 } }, { status: 429 });
        }
        return undefined;
      }),
    );
    const first = createActionContext();
    const err = await failure(run(config({ text: LONG }), first));
    expect(err.retryable).toBe(true);
    expect(err.retryAfterMs).toBe(7000);
    expect(err.message).toContain("part 2 of 3");
    expect(first.savedProgress).toEqual([{ sent: 1, chunks: 3 }]);

    const second = retryContext(first);
    const result = await run(config({ text: LONG }), second);
    expect(result.output).toMatchObject({ chunks: 3, skipped: 1 });
    // Accepted: part 1 by the first attempt, parts 2 and 3 by the retry (the refused part 2 never reached the API's handler).
    expect(calls).toBe(4);
    expect(received.map((r) => (r.body.text as string).slice(0, 7))).toEqual(["line 00", "line 40", "line 80"]);
  });

  test('a 400 "chat not found" is not retryable and says what to do, without the token', async () => {
    const err = await failure(run(config({ chat_id: "987654321" }), createActionContext()));
    expect(err.retryable).toBe(false);
    expect(err.message).toContain("chat 987654321 was not found");
    expect(err.message).toContain("send the bot a message first");
    expect(err.message).toContain('Telegram: "Bad Request: chat not found"');
    expect(err.message).not.toContain(TOKEN);
  });

  test("a refused token (401) is not retryable and says where to get a new one; 5xx is retryable", async () => {
    const refused = await failure(run(config({ bot_token: "7123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDxxx" }), createActionContext()));
    expect(refused.retryable).toBe(false);
    expect(refused.message).toContain("@BotFather");
    server.use(http.post(`${TELEGRAM_API}/:bot/sendMessage`, () => HttpResponse.json({ ok: false, error_code: 502, description: "Bad Gateway" }, { status: 502 })));
    expect((await failure(run(config(), createActionContext()))).retryable).toBe(true);
  });

  test("config problems are said with the field and never quote the token", () => {
    const bad = telegramConfigSchema.safeParse({ bot_token: "not-a-token-but-a-secret-value", chat_id: "general chat", text: " " });
    expect(bad.success).toBe(false);
    const messages = bad.error!.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
    expect(messages).toEqual([
      expect.stringMatching(/^bot_token: telegram: "bot_token" is not a bot token/),
      expect.stringMatching(/^chat_id: telegram: "chat_id" must be a numeric chat id/),
      expect.stringMatching(/^text: telegram: "text" is empty/),
    ]);
    expect(messages.join("\n")).not.toContain("not-a-token-but-a-secret-value");
    // Templates are checked once rendered.
    expect(telegramConfigSchema.safeParse({ bot_token: "{{secrets.TELEGRAM_BOT_TOKEN}}", chat_id: "{{trigger.body.chat}}", text: "{{trigger.body.text}}" }).success).toBe(true);
  });
});

describe("telegram action in a run", () => {
  const cleanups: (() => unknown)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  test("a bot token pasted into the config (not a secret) is redacted from the step's input and error, the run's error and the log", async () => {
    const logs: string[] = [];
    const app = createTestApp({ log: createLogger("whenthen", "debug", (line) => logs.push(line)) });
    const worker = startWorker(app);
    cleanups.push(() => app.cleanup(), () => worker.stop());
    // A network failure: safeFetch's message names the whole URL, token included.
    server.use(http.post(`${TELEGRAM_API}/:bot/sendMessage`, () => HttpResponse.error()));
    const definition = { version: 1, trigger: { type: "webhook", config: {} }, actions: [{ type: "telegram", config: config() }], retry: { max_attempts: 1 } };
    expect(checkDefinition(definition).ok).toBe(true);
    const applet = await app.applets.create({ name: "telegram", definition });
    const { runId } = await app.applets.test(applet.id, { body: { title: "hello" } });
    await worker.drain();

    const stored = (await app.store.runs.get(runId))!;
    expect(stored.status).toBe("dead");
    expect(stored.steps.at(-1)!.error).toContain("[redacted]");
    const secretPart = TOKEN.split(":")[1]!;
    // Every column of the run as stored (the applet's own definition holds the pasted token, as written).
    const rows = sqliteOf(app.store).prepare("SELECT * FROM runs WHERE id = ?").all(runId);
    for (const text of [JSON.stringify(stored), JSON.stringify(rows), logs.join("\n")]) expect(text).not.toContain(secretPart);
  });
});
