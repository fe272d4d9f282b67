import { http, HttpResponse } from "msw";
import { afterAll, describe, expect, test } from "vitest";
import { pushAction, pushConfigSchema } from "@/lib/actions/push";
import { fieldsOf } from "@/lib/plugin";
import { createSafeFetch } from "@/lib/net/safe-fetch";
import { createActionContext, removeTempDirs, type TestActionContext, failure } from "../helpers/action-context";
import { sentTo, server, useHttpMocks } from "../helpers/http";

useHttpMocks();
afterAll(removeTempDirs);

const run = (config: Record<string, unknown>, ctx: TestActionContext = createActionContext()) =>
  pushAction.run(pushConfigSchema.parse(config), ctx);

const json = (body: string) => JSON.parse(body) as Record<string, unknown>;

describe("push action: ntfy", () => {
  test("publishes JSON to the server root with topic, message, title, priority, tags and click", async () => {
    const result = await run({
      provider: "ntfy",
      topic: "whenthen-alerts",
      title: "Backup",
      message: "Backup finished",
      priority: "4",
      tags: "floppy_disk, white_check_mark ,",
      click: "https://example.com/backups",
    });
    const [req] = sentTo("ntfy");
    expect(req?.url).toBe("https://ntfy.sh/");
    expect(req?.headers["content-type"]).toBe("application/json");
    expect(req?.headers.authorization).toBeUndefined();
    expect(json(req!.body)).toEqual({
      topic: "whenthen-alerts",
      message: "Backup finished",
      title: "Backup",
      priority: 4,
      tags: ["floppy_disk", "white_check_mark"],
      click: "https://example.com/backups",
    });
    expect(result.output).toMatchObject({ provider: "ntfy", status: 200 });
  });

  test("optional fields left empty are not sent", async () => {
    await run({ provider: "ntfy", topic: "t", message: "m", title: "", priority: "", tags: "", click: "" });
    expect(json(sentTo("ntfy")[0]!.body)).toEqual({ topic: "t", message: "m" });
  });

  test("NTFY_TOKEN is sent as a Bearer token to NTFY_SERVER, and never to another server", async () => {
    const ctx = createActionContext({ env: { NTFY_TOKEN: "tk_env" } });
    await run({ provider: "ntfy", topic: "t", message: "m" }, ctx);
    expect(sentTo("ntfy")[0]?.headers.authorization).toBe("Bearer tk_env");

    const other: Record<string, string>[] = [];
    server.use(
      http.post("https://ntfy.example.org/", ({ request }) => {
        other.push(Object.fromEntries(request.headers.entries()));
        return HttpResponse.json({ id: "x" });
      }),
    );
    await run({ provider: "ntfy", server: "https://ntfy.example.org", topic: "t", message: "m" }, ctx);
    expect(other[0]?.authorization).toBeUndefined();
    await run({ provider: "ntfy", server: "https://ntfy.example.org/", topic: "t", message: "m", token: "tk_own" }, ctx);
    expect(other[1]?.authorization).toBe("Bearer tk_own");
  });

  test("NTFY_SERVER may be on the LAN; a private server written into the applet is refused", async () => {
    const lan = "http://192.168.1.20:8080";
    const seen: string[] = [];
    server.use(
      http.post(`${lan}/`, ({ request }) => {
        seen.push(request.url);
        return HttpResponse.json({ id: "lan" });
      }),
    );
    const guarded = { http: createSafeFetch({ allowPrivate: false }) };
    const ctx = { ...createActionContext({ env: { NTFY_SERVER: lan } }), ...guarded };
    await pushAction.run({ provider: "ntfy", topic: "t", message: "m" }, ctx);
    expect(seen).toEqual([`${lan}/`]);

    const err = await failure(pushAction.run({ provider: "ntfy", server: lan, topic: "t", message: "m" }, { ...createActionContext(), ...guarded }));
    expect(err.message).toMatch(/192\.168\.1\.20/);
    expect(seen).toHaveLength(1);
  });

  test("a message over 4,096 bytes is cut on a character boundary, with a warning, and accepted", async () => {
    const ctx = createActionContext();
    await run({ provider: "ntfy", topic: "t", message: "é".repeat(3000) }, ctx);
    const message = json(sentTo("ntfy")[0]!.body).message as string;
    expect(Buffer.byteLength(message)).toBeLessThanOrEqual(4096);
    expect(message.endsWith("…")).toBe(true);
    expect(message).not.toContain("\uFFFD");
    expect(ctx.warnings).toEqual(["push: message cut from 6000 to 4096 bytes (ntfy's limit)"]);
  });

  test("a title over 250 characters is cut with a warning", async () => {
    const ctx = createActionContext();
    await run({ provider: "ntfy", topic: "t", message: "m", title: "T".repeat(300) }, ctx);
    expect((json(sentTo("ntfy")[0]!.body).title as string).length).toBe(250);
    expect(ctx.warnings).toEqual(["push: title cut from 300 to 250 characters"]);
  });

  test("priority must be 1 to 5 for ntfy; the topic is required and checked", async () => {
    expect(pushConfigSchema.safeParse({ provider: "ntfy", topic: "t", message: "m", priority: "0" }).success).toBe(false);
    expect(pushConfigSchema.safeParse({ provider: "ntfy", topic: "t", message: "m", priority: "high" }).success).toBe(false);
    expect(pushConfigSchema.safeParse({ provider: "ntfy", topic: "t", message: "m", priority: "{{trigger.p}}" }).success).toBe(true);
    expect(pushConfigSchema.safeParse({ provider: "ntfy", message: "m" }).success).toBe(false);
    expect(pushConfigSchema.safeParse({ provider: "ntfy", topic: "has spaces", message: "m" }).success).toBe(false);

    const rendered = await failure(pushAction.run({ provider: "ntfy", topic: "t", message: "m", priority: "9" }, createActionContext()));
    expect(rendered.retryable).toBe(false);
    expect(rendered.message).toBe('push: "priority" must be a whole number from 1 to 5, got "9"');
    expect(sentTo("ntfy")).toHaveLength(0);
  });

  test("ntfy 4xx fail without retry, with ntfy's error; 429 and 5xx are retryable", async () => {
    server.use(http.post("https://ntfy.sh/", () => HttpResponse.json({ code: 40301, http: 403, error: "forbidden" }, { status: 403 })));
    const forbidden = await failure(run({ provider: "ntfy", topic: "t", message: "m" }));
    expect(forbidden.retryable).toBe(false);
    expect(forbidden.message).toBe("push: HTTP 403 — ntfy: forbidden");

    server.use(
      http.post("https://ntfy.sh/", () =>
        HttpResponse.json({ code: 42901, http: 429, error: "limit reached" }, { status: 429, headers: { "retry-after": "60" } }),
      ),
    );
    const limited = await failure(run({ provider: "ntfy", topic: "t", message: "m" }));
    expect(limited.retryable).toBe(true);
    expect(limited.retryAfterMs).toBe(60_000);

    const down = await failure(run({ provider: "ntfy", server: "https://status.test/status/500", topic: "t", message: "m" }));
    expect(down.retryable).toBe(true);
  });
});

describe("push action: Pushover", () => {
  test("posts a form with token, user, message, title, priority and url", async () => {
    const result = await run({
      provider: "pushover",
      user_key: "uQiRzpo4DXghDmr9QzzfQu27cmVRsG",
      app_token: "azGDORePK8gMaC0QOYAMyEEuzJnyUi",
      title: "Door",
      message: "Front door opened",
      priority: "-1",
      url: "https://example.com/cam",
    });
    const [req] = sentTo("pushover");
    expect(req?.headers["content-type"]).toBe("application/x-www-form-urlencoded");
    expect(Object.fromEntries(new URLSearchParams(req!.body))).toEqual({
      token: "azGDORePK8gMaC0QOYAMyEEuzJnyUi",
      user: "uQiRzpo4DXghDmr9QzzfQu27cmVRsG",
      message: "Front door opened",
      title: "Door",
      priority: "-1",
      url: "https://example.com/cam",
    });
    expect(result.output).toMatchObject({ provider: "pushover", status: 200 });
    expect(sentTo("ntfy")).toHaveLength(0);
  });

  test("keys default to PUSHOVER_USER_KEY and PUSHOVER_APP_TOKEN; missing keys fail clearly", async () => {
    const ctx = createActionContext({ env: { PUSHOVER_USER_KEY: "u-env", PUSHOVER_APP_TOKEN: "a-env" } });
    await run({ provider: "pushover", message: "m" }, ctx);
    const form = new URLSearchParams(sentTo("pushover")[0]!.body);
    expect([form.get("user"), form.get("token")]).toEqual(["u-env", "a-env"]);

    const err = await failure(run({ provider: "pushover", message: "m" }));
    expect(err.retryable).toBe(false);
    expect(err.message).toMatch(/Pushover needs "app_token"/);
  });

  test("a message over 1,024 characters is cut with a warning and accepted", async () => {
    const ctx = createActionContext();
    await run({ provider: "pushover", user_key: "u", app_token: "a", message: "😀".repeat(1500) }, ctx);
    const message = new URLSearchParams(sentTo("pushover")[0]!.body).get("message")!;
    expect(Array.from(message)).toHaveLength(1024);
    expect(ctx.warnings).toEqual(["push: message cut from 1500 to 1024 characters (Pushover's limit)"]);
  });

  test("priority is -2 to 2 for Pushover; emergency priority adds retry and expire", async () => {
    expect(pushConfigSchema.safeParse({ provider: "pushover", message: "m", priority: "3" }).success).toBe(false);
    expect(pushConfigSchema.safeParse({ provider: "pushover", message: "m", priority: "-2" }).success).toBe(true);
    await run({ provider: "pushover", user_key: "u", app_token: "a", message: "m", priority: 2 });
    const form = new URLSearchParams(sentTo("pushover")[0]!.body);
    expect([form.get("priority"), form.get("retry"), form.get("expire")]).toEqual(["2", "60", "3600"]);
  });

  test("Pushover's 4xx errors fail without retry and name its errors", async () => {
    server.use(
      http.post("https://api.pushover.net/1/messages.json", () =>
        HttpResponse.json({ user: "invalid", errors: ["user identifier is not a valid user, group, or subscribed user key"], status: 0 }, { status: 400 }),
      ),
    );
    const err = await failure(run({ provider: "pushover", user_key: "bad", app_token: "a", message: "m" }));
    expect(err.retryable).toBe(false);
    expect(err.message).toBe("push: HTTP 400 — Pushover: user identifier is not a valid user, group, or subscribed user key");
  });
});

describe("push action: provider switch", () => {
  test("fields of the provider not chosen are kept but ignored, and each field shows only for its provider", async () => {
    const ctx = createActionContext();
    // An applet switched from ntfy to Pushover in the editor still carries its ntfy values.
    await run({ provider: "pushover", user_key: "u", app_token: "a", message: "m", topic: "old-topic", server: "https://ntfy.sh" }, ctx);
    expect(sentTo("pushover")).toHaveLength(1);
    expect(sentTo("ntfy")).toHaveLength(0);
    expect(new URLSearchParams(sentTo("pushover")[0]!.body).has("topic")).toBe(false);

    const visible = (provider: string) =>
      fieldsOf(pushAction.configSchema).filter((f) => !f.showWhen || f.showWhen.equals.includes(provider)).map((f) => f.name);
    expect(visible("ntfy")).toEqual(["provider", "server", "topic", "token", "title", "message", "priority", "click", "tags", "approval_buttons"]);
    expect(visible("pushover")).toEqual(["provider", "user_key", "app_token", "title", "message", "priority", "url"]);
  });

  test("unknown providers and unknown keys are refused; message is required", () => {
    expect(pushConfigSchema.safeParse({ provider: "gotify", message: "m" }).success).toBe(false);
    expect(pushConfigSchema.safeParse({ provider: "ntfy", topic: "t", message: "m", sound: "siren" }).success).toBe(false);
    const empty = pushConfigSchema.safeParse({ provider: "ntfy", topic: "t", message: "" });
    expect(empty.success).toBe(false);
    expect(empty.error?.issues[0]?.message).toMatch(/push: "message" is empty/);
  });

  test("parsing is idempotent: a parsed config (priority as a number) parses to itself", () => {
    const once = pushConfigSchema.parse({ provider: "pushover", message: "m", priority: "-2" });
    expect(once.priority).toBe(-2);
    expect(pushConfigSchema.parse(once)).toEqual(once);
  });

  test("click and url must be http(s)", async () => {
    expect(pushConfigSchema.safeParse({ provider: "ntfy", topic: "t", message: "m", click: "javascript:alert(1)" }).success).toBe(false);
    const err = await failure(pushAction.run({ provider: "pushover", user_key: "u", app_token: "a", message: "m", url: "file:///etc/passwd" }, createActionContext()));
    expect(err.retryable).toBe(false);
    expect(err.message).toBe('push: "url" must be an http(s) URL, got a "file:" URL');
  });
});
