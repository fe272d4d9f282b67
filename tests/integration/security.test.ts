import { fork } from "node:child_process";
import { linkSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer, request, type Server } from "node:http";
import { connect, type AddressInfo } from "node:net";
import path from "node:path";
import nodemailer from "nodemailer";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { noteAction, noteConfigSchema } from "@/lib/actions/note";
import type { Api } from "@/lib/api";
import type { UserError } from "@/lib/core/errors";
import { capJson, LIMITS } from "@/lib/core/limits";
import { createIngress } from "@/lib/http/ingress";
import { createWebGuard } from "@/lib/http/web-guard";
import { startReceiver, type Receiver } from "@/lib/mail/receiver";
import { createSafeFetch, isPublicAddress } from "@/lib/net/safe-fetch";
import { createActionContext, makeTempDir, removeTempDirs } from "../helpers/action-context";
import { bootAuth, shutAuth, type BootedAuth } from "../helpers/auth";
import { createTestApp, webhookToHttp, type TestApp } from "../helpers/db";
import { sqliteOf } from "@/lib/db/store/sqlite";

/**
 * The "close what an attacker found from outside" part,, the parts that need no browser and no
 * Next: the API and the auth in front of it, the lean ingress, the stored-payload cap. The same
 * vectors against the spawned server are in tests/e2e/security.test.ts.
 */

const opened: BootedAuth[] = [];
afterEach(async () => {
  for (const b of opened.splice(0)) await shutAuth(b);
});
const boot = async (env: Record<string, string> = {}) => {
  const b = await bootAuth(env);
  opened.push(b);
  return b;
};

const CREDENTIALS = { email: "owner@example.com", password: "correct horse battery" };

function call(api: Api, method: string, path: string, opts: { headers?: Record<string, string>; body?: BodyInit; host?: string } = {}): Promise<Response> {
  const headers: Record<string, string> = { ...(opts.body !== undefined && typeof opts.body === "string" ? { "content-type": "application/json" } : {}), ...opts.headers };
  if (opts.host) headers.host = opts.host;
  return api.handle(new Request(`http://localhost:3000${path}`, { method, headers, body: opts.body, duplex: "half" } as RequestInit));
}

/** A body stream of `total` bytes that counts how much of it was pulled. */
function countingBody(total: number) {
  const chunk = new Uint8Array(64 * 1024).fill(0x61);
  const pulled = { bytes: 0 };
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (pulled.bytes >= total) return controller.close();
      pulled.bytes += chunk.length;
      controller.enqueue(chunk);
    },
  }, { highWaterMark: 0 });
  return { stream, pulled };
}

/** Resident memory of a process and its high-water mark since the last reset, in MB. */
function memoryOf(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)![1]) / 1024;
  return { rss: kb("VmRSS"), peak: kb("VmHWM") };
}

/**
 * Streams `total` bytes of body over a raw socket as fast as the server takes them, reading the
 * answer meanwhile as curl does (it may come, and the server close, long before the body is sent).
 */
function streamBody(port: number, pathname: string, total: number, declareLength: boolean): Promise<{ status: number; body: string; sent: number }> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    let received = "";
    let sent = 0;
    let closed = false;
    socket.on("data", (c: Buffer) => (received += c.toString("latin1")));
    socket.on("error", () => {}); // EPIPE/ECONNRESET once the server closes: expected
    socket.on("close", () => {
      closed = true;
      const head = received.indexOf("\r\n\r\n");
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(received)?.[1] ?? 0), body: head < 0 ? "" : received.slice(head + 4), sent });
    });
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    const framed = declareLength ? chunk : Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from("\r\n")]);
    socket.once("connect", async () => {
      socket.write(`POST ${pathname} HTTP/1.1\r\nHost: localhost:3000\r\ncontent-type: application/json\r\n${declareLength ? `content-length: ${total}` : "transfer-encoding: chunked"}\r\n\r\n`);
      while (sent < total && !closed && received === "") {
        sent += chunk.length;
        if (!socket.write(framed)) await new Promise((r) => socket.once("drain", r).once("close", r));
        await new Promise((r) => setImmediate(r));
      }
      if (!closed) socket.end(declareLength ? "" : "0\r\n\r\n");
    });
  });
}

describe("request bodies are bounded on every route", () => {
  it("a 300 MB body streamed to POST /api/login of a real web process grows its RSS by less than 20 MB and gets 413 (chunked or declared)", async () => {
    const dataDir = makeTempDir("whenthen-web-");
    const child = fork(path.resolve("tests/helpers/web-process.ts"), [], {
      env: { ...process.env, DATA_DIR: dataDir, PUBLIC_URL: "http://localhost:3000", LOG_LEVEL: "error" },
      execArgv: ["--import", "tsx"],
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    try {
      const port = await new Promise<number>((resolve, reject) => {
        child.once("message", (m) => resolve((m as { port: number }).port));
        child.once("exit", (code) => reject(new Error(`web process exited with ${code}`)));
      });
      // The first request pays for loading the API's modules: not part of the measurement.
      await streamBody(port, "/api/login", 4 * 1024 * 1024, false);
      for (const declareLength of [false, true]) {
        writeFileSync(`/proc/${child.pid}/clear_refs`, "5"); // resets VmHWM (the peak) to the current RSS
        const before = memoryOf(child.pid!).rss;
        const r = await streamBody(port, "/api/login", 300 * 1024 * 1024, declareLength);
        const growth = memoryOf(child.pid!).peak - before;
        const how = declareLength ? "with Content-Length" : "chunked";
        expect(growth, `${how}: the web process grew ${growth.toFixed(1)} MB`).toBeLessThan(20);
        expect(r.status, how).toBe(413);
        expect(r.sent, how).toBeLessThan(50 * 1024 * 1024);
      }
    } finally {
      child.kill("SIGTERM");
      await new Promise((r) => child.once("exit", r));
    }
  }, 60_000);

  it("a streamed 300 MB login body is refused with 413 after reading no more than the limit; a declared one before reading anything", async () => {
    const b = await boot();
    const streamed = countingBody(300 * 1024 * 1024);
    const res = await call(b.api, "POST", "/api/login", { headers: { "content-type": "application/json" }, body: streamed.stream });
    expect(res.status).toBe(413);
    expect(res.headers.get("connection")).toBe("close");
    expect((await res.json()).error).toBe(`request body larger than ${LIMITS.apiBodyBytes} bytes`);
    expect(streamed.pulled.bytes).toBeLessThanOrEqual(LIMITS.apiBodyBytes + 64 * 1024);

    const declared = countingBody(300 * 1024 * 1024);
    const refused = await call(b.api, "POST", "/api/setup", { headers: { "content-type": "application/json", "content-length": String(300 * 1024 * 1024) }, body: declared.stream });
    expect(refused.status).toBe(413);
    expect(declared.pulled.bytes).toBe(0);
    expect(await b.app.store.users.count()).toBe(0);
  });

  it("the import takes up to 10 MB, every other route up to 2 MB, and server.ts refuses a declared body over 10 MB before Next sees it", async () => {
    const b = await boot();
    const setup = await call(b.api, "POST", "/api/setup", { body: JSON.stringify(CREDENTIALS) });
    const cookie = (setup.headers.get("set-cookie") ?? "").split(";")[0]!;
    const threeMb = JSON.stringify([{ pad: "x".repeat(3 * 1024 * 1024) }]);
    expect((await call(b.api, "POST", "/api/applets", { headers: { cookie }, body: threeMb })).status).toBe(413);
    // Over 2 MB and still read: the import answers about the content, not the size.
    const imported = await call(b.api, "POST", "/api/import", { headers: { cookie }, body: threeMb });
    expect(imported.status).toBe(400);
    expect((await imported.json()).error).toMatch(/^import: /);

    const guard = createWebGuard({ publicUrl: "http://localhost:3000", dev: false });
    const server = createServer((req, res) => {
      if (guard(req, res)) return;
      req.resume();
      req.on("end", () => res.end("next would have read it"));
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    try {
      const port = (server.address() as AddressInfo).port;
      const status = await new Promise<number>((resolve, reject) => {
        const req = request({ port, host: "127.0.0.1", path: "/anything", method: "POST", headers: { "content-length": String(LIMITS.importBodyBytes + 1) } }, (res) => resolve(res.statusCode ?? 0));
        req.on("error", reject);
        req.flushHeaders();
      });
      expect(status).toBe(413);
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});

describe("security headers", () => {
  let app: TestApp;
  let server: Server;
  let base: string;
  beforeAll(async () => {
    app = createTestApp({ env: { PUBLIC_URL: "https://whenthen.example.com" } });
    const ingress = createIngress(app);
    const guard = createWebGuard({ publicUrl: app.config.publicUrl, dev: false });
    server = createServer((req, res) => {
      if (ingress(req, res) || guard(req, res)) return;
      res.writeHead(200, { "content-type": "text/html" });
      res.end(`<p>${String(req.headers["content-security-policy"])}</p>`);
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((r) => server.close(r));
    void app.cleanup();
  });

  it("behind HTTPS every answer (page, API, webhook, health) carries HSTS, nosniff, Referrer-Policy and a CSP that forbids framing; a page's policy has a nonce and no unsafe-eval", async () => {
    const hook = await app.applets.create({ name: "hook", definition: webhookToHttp("https://status.test/status/200") });
    const answers = {
      page: await fetch(`${base}/runs`),
      api: await fetch(`${base}/api/applets`),
      webhook: await fetch(`${base}/api/hooks/${hook.id}/${hook.webhookToken}`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" }),
      unknownHook: await fetch(`${base}/api/hooks/nope/nope`, { method: "POST" }),
      health: await fetch(`${base}/api/health`),
    };
    expect(answers.webhook.status).toBe(202);
    for (const [what, res] of Object.entries(answers)) {
      expect(res.headers.get("strict-transport-security"), what).toBe("max-age=31536000");
      expect(res.headers.get("x-content-type-options"), what).toBe("nosniff");
      expect(res.headers.get("referrer-policy"), what).toBe("same-origin");
      expect(res.headers.get("content-security-policy"), what).toContain("frame-ancestors 'none'");
    }
    const policy = answers.page.headers.get("content-security-policy")!;
    expect(policy).toMatch(/script-src 'self' 'nonce-[A-Za-z0-9+/=]{24}' 'strict-dynamic'; /);
    expect(policy).not.toContain("unsafe-eval");
    // Next reads the nonce from the request's own policy header: the same one is handed on.
    expect(await answers.page.text()).toBe(`<p>${policy}</p>`);
  });
});

describe("Host and Origin are checked against PUBLIC_URL", () => {
  it("POST /api/setup with Host: evil.example and a matching Origin (DNS rebinding) is refused and creates no admin", async () => {
    const b = await boot();
    const rebound = await call(b.api, "POST", "/api/setup", { host: "evil.example", headers: { origin: "http://evil.example" }, body: JSON.stringify(CREDENTIALS) });
    expect(rebound.status).toBe(403);
    expect((await rebound.json()).error).toContain("PUBLIC_URL");
    expect(await b.app.store.users.count()).toBe(0);
    // A loopback name is this machine whatever the port: a laptop opening 127.0.0.1 sets up fine.
    const local = await call(b.api, "POST", "/api/setup", { host: "127.0.0.1:3000", headers: { origin: "http://127.0.0.1:3000" }, body: JSON.stringify(CREDENTIALS) });
    expect(local.status).toBe(201);
    const cookie = (local.headers.get("set-cookie") ?? "").split(";")[0]!;
    // Every session route, reads too: a rebound page cannot even list applets.
    expect((await call(b.api, "GET", "/api/applets", { host: "evil.example", headers: { cookie } })).status).toBe(403);
    expect((await call(b.api, "GET", "/api/applets", { headers: { cookie } })).status).toBe(200);
    expect((await call(b.api, "POST", "/api/login", { host: "evil.example", body: JSON.stringify(CREDENTIALS) })).headers.get("set-cookie")).toBeNull();
  });

  it("with PUBLIC_URL set, only its host and origin are served; the page gate says which variable to set", async () => {
    const b = await boot({ PUBLIC_URL: "https://whenthen.example.com" });
    const body = JSON.stringify(CREDENTIALS);
    expect((await call(b.api, "POST", "/api/setup", { host: "localhost:3000", body })).status).toBe(403);
    expect((await call(b.api, "POST", "/api/setup", { host: "whenthen.example.com", headers: { origin: "https://evil.example" }, body })).status).toBe(403);
    expect((await call(b.api, "POST", "/api/setup", { host: "whenthen.example.com", headers: { origin: "https://whenthen.example.com" }, body })).status).toBe(201);
    const page = await fetch(`${b.base}/`, { redirect: "manual" });
    expect(page.status).toBe(403);
    expect(await page.text()).toContain(`reached as &#34;127.0.0.1:${new URL(b.base).port}&#34;`);
  });

  it("pnpm dev opened from the LAN works for the hosts in NEXT_ALLOWED_DEV_ORIGINS, and production ignores that variable", async () => {
    const lan = { host: "192.168.1.20:3000", headers: { origin: "http://192.168.1.20:3000" }, body: JSON.stringify(CREDENTIALS) };
    const unset = await boot();
    const refused = await call(unset.api, "POST", "/api/setup", lan);
    expect(refused.status).toBe(403);
    expect((await refused.json()).error).toBe(
      'request refused: this server answers as http://localhost:3000 (PUBLIC_URL) and was reached as "192.168.1.20:3000"; set PUBLIC_URL to the address you open it at (e.g. PUBLIC_URL=http://192.168.1.20:3000) and restart, or with pnpm dev add the host to NEXT_ALLOWED_DEV_ORIGINS',
    );
    const prod = await boot({ NEXT_ALLOWED_DEV_ORIGINS: "192.168.1.20", NODE_ENV: "production" });
    expect((await call(prod.api, "POST", "/api/setup", lan)).status).toBe(403);
    const dev = await boot({ NEXT_ALLOWED_DEV_ORIGINS: "192.168.1.20" });
    expect((await call(dev.api, "POST", "/api/setup", lan)).status).toBe(201);
  });
});

describe("beyond the found vectors", () => {
  it("a state-changing session route reached with a non-JSON content type (a form post from another site) is refused with 415, before the origin check", async () => {
    const b = await boot();
    const setup = await call(b.api, "POST", "/api/setup", { body: JSON.stringify(CREDENTIALS) });
    const cookie = (setup.headers.get("set-cookie") ?? "").split(";")[0]!;
    for (const type of ["application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "text/plain"]) {
      const res = await call(b.api, "POST", "/api/secrets", { headers: { cookie, "content-type": type, origin: "https://evil.example" }, body: '{"name":"EVIL","value":"x"}' });
      expect(res.status, type).toBe(415);
      expect((await res.json()).error, type).toContain("application/json");
    }
    // No content type at all, with a body, is not JSON either (a no-cors fetch of a Blob).
    expect((await call(b.api, "POST", "/api/login", { headers: { "content-length": "40" }, body: new Blob([JSON.stringify(CREDENTIALS)]) })).status).toBe(415);
    expect(await b.app.secrets.list()).toEqual([]);
    // A POST that carries nothing (Retry, Sign out) needs no type.
    expect((await call(b.api, "POST", "/api/logout", { headers: { cookie } })).status).toBe(200);
  });
});

describe("and webhook bodies that cost more than they weigh", () => {
  let app: TestApp;
  let server: Server;
  let base: string;
  beforeAll(async () => {
    app = createTestApp();
    const ingress = createIngress(app);
    server = createServer((req, res) => void ingress(req, res));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((r) => server.close(r));
    void app.cleanup();
  });
  const hook = async () => {
    const a = await app.applets.create({ name: "hook", definition: webhookToHttp("https://status.test/status/200") });
    return `${base}/api/hooks/${a.id}/${a.webhookToken}`;
  };
  const stored = async (res: Response) => (await app.store.runs.event(((await res.json()) as { event_id: string }).event_id))!.payload;

  it("capping an oversized payload serializes it once, however many keys it has (it was up to nine times)", () => {
    const payload = { body: Object.fromEntries(Array.from({ length: 9_999 }, (_, i) => [`field${i}`, "v".repeat(90)])) };
    const text = JSON.stringify(payload);
    const stringify = vi.spyOn(JSON, "stringify");
    try {
      const capped = capJson(payload, LIMITS.storedPayloadBytes, text);
      expect(capped.truncated).toBe(true);
      // Once for the capped copy, which is small; never the whole value again.
      expect(stringify).toHaveBeenCalledTimes(1);
      expect(Buffer.byteLength(capped.json)).toBeLessThanOrEqual(LIMITS.storedPayloadBytes);
      const body = (capped.value as { body: Record<string, string> }).body;
      // Too many keys for their strings to be the problem: strings are cut short, then keys dropped.
      expect(body.field0).toMatch(/^v{40,}…$/);
      expect(body["…"]).toMatch(/^\d+ more keys$/);
    } finally {
      stringify.mockRestore();
    }
  });

  it("an 868 KB form with 100,000 fields (or JSON with 1e5 keys) is stored as capped raw text with a parse_error instead of being parsed", async () => {
    const form = Array.from({ length: 100_000 }, (_, i) => `f${i}=x`).join("&");
    expect(form.length).toBeGreaterThan(860_000);
    const formRes = await fetch(await hook(), { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: form });
    expect(formRes.status).toBe(202);
    const formPayload = await stored(formRes);
    expect(formPayload.body).toMatchObject({ parse_error: `more than ${LIMITS.payloadKeys} fields` });
    expect((formPayload.body as { raw: string }).raw.startsWith("f0=x&f1=x")).toBe(true);
    expect(formPayload.truncated).toBe(true);
    expect(Buffer.byteLength(JSON.stringify(formPayload))).toBeLessThanOrEqual(LIMITS.storedPayloadBytes);

    const wide = JSON.stringify(Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [`k${i}`, i])));
    const jsonPayload = await stored(await fetch(await hook(), { method: "POST", headers: { "content-type": "application/json" }, body: wide.slice(0, 1024 * 1024 - 2) + "}" }));
    expect(jsonPayload.body).toMatchObject({ parse_error: `more than ${LIMITS.payloadKeys} object keys` });
    // Repeated fields are collected in linear time too, and still become an array.
    const repeated = await stored(await fetch(await hook(), { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: Array.from({ length: 9_000 }, () => "tag=a").join("&") }));
    expect((repeated.body as { tag: string[] }).tag).toHaveLength(9_000);
  });

  it("JSON nested 10,000 levels deep gets 202 and is stored as raw text with a parse_error, never a 500", async () => {
    const deep = "[".repeat(10_000) + "]".repeat(10_000);
    const res = await fetch(await hook(), { method: "POST", headers: { "content-type": "application/json" }, body: deep });
    expect(res.status).toBe(202);
    const payload = await stored(res);
    expect(payload.body).toEqual({ raw: deep, parse_error: `nested deeper than ${LIMITS.jsonDepth} levels` });
    // Just under the bound parses as usual.
    const fine = "[".repeat(LIMITS.jsonDepth) + "]".repeat(LIMITS.jsonDepth);
    expect((await stored(await fetch(await hook(), { method: "POST", headers: { "content-type": "application/json" }, body: fine }))).body).toEqual(JSON.parse(fine));
  });

  it("the session API answers deep JSON with 400 naming the bound", async () => {
    const b = await boot();
    const res = await call(b.api, "POST", "/api/setup", { body: `{"email":${"[".repeat(10_000)}${"]".repeat(10_000)}}` });
    expect(res.status).toBe(400);
    expect((await res.json()).error).toBe(`request body: nested deeper than ${LIMITS.jsonDepth} levels`);
  });
});

describe("SMTP: a message that can never be accepted gets a permanent answer", () => {
  let app: TestApp;
  let receiver: Receiver;
  beforeAll(async () => {
    app = createTestApp({ env: { INBOUND_DOMAIN: "hooks.example" } });
    await app.applets.create({ name: "mail", definition: { version: 1, trigger: { type: "email", config: { to_alias: "in" } }, actions: [{ type: "note", config: { filename: "mail.md", content: "{{trigger.subject}}" } }] } });
    receiver = await startReceiver(app, { port: 0, host: "127.0.0.1" });
  });
  afterAll(async () => {
    await receiver.close();
    void app.cleanup();
  });
  /** Sends a raw message with nodemailer (a real SMTP client); resolves with the reply code. */
  async function send(raw: string): Promise<{ code: number; response: string }> {
    const transport = nodemailer.createTransport({ host: "127.0.0.1", port: receiver.port, secure: false, ignoreTLS: true });
    try {
      const info = await transport.sendMail({ envelope: { from: "sender@example.com", to: ["in@hooks.example"] }, raw });
      return { code: 250, response: info.response };
    } catch (err) {
      const e = err as { responseCode?: number; response?: string };
      return { code: e.responseCode ?? 0, response: e.response ?? String(err) };
    } finally {
      transport.close();
    }
  }
  const head = "From: sender@example.com\r\nTo: in@hooks.example\r\nSubject: hello\r\n";

  it("50,000 headers get 552 with the reason, not a 451 that makes the sender retry for days", async () => {
    const headers = Array.from({ length: 50_000 }, (_, i) => `X-H${i}: v${i}`).join("\r\n");
    const r = await send(`${head}${headers}\r\n\r\nbody\r\n`);
    expect(r.code).toBe(552);
    expect(r.response).toMatch(/^552 5\.3\.4 Message refused: a header block is larger than 1 MB/);
  });

  it("2,000 attachments get 552 with the reason", async () => {
    const parts = Array.from({ length: 2_000 }, (_, i) => `--b\r\nContent-Type: text/plain\r\nContent-Disposition: attachment; filename="a${i}.txt"\r\n\r\nx\r\n`).join("");
    const r = await send(`${head}Content-Type: multipart/mixed; boundary="b"\r\n\r\n${parts}--b--\r\n`);
    expect(r.code).toBe(552);
    expect(r.response).toMatch(/more than 1000 MIME parts/);
    // An ordinary message right after is taken: the receiver is fine.
    expect((await send(`${head}\r\nhi\r\n`)).code).toBe(250);
  });

  it("our own fault (the database gone) is still a temporary 451", async () => {
    const broken = createTestApp({ env: { INBOUND_DOMAIN: "hooks.example" } });
    await broken.applets.create({ name: "mail", definition: { version: 1, trigger: { type: "email", config: { to_alias: "in" } }, actions: [{ type: "note", config: { filename: "m.md", content: "x" } }] } });
    const r = await startReceiver(broken, { port: 0, host: "127.0.0.1" });
    try {
      sqliteOf(broken.store).exec("DROP TABLE runs");
      const transport = nodemailer.createTransport({ host: "127.0.0.1", port: r.port, secure: false, ignoreTLS: true });
      const err = await transport.sendMail({ envelope: { from: "sender@example.com", to: ["in@hooks.example"] }, raw: `${head}\r\nhi\r\n` }).catch((e: { responseCode?: number }) => e);
      transport.close();
      expect((err as { responseCode?: number }).responseCode).toBe(451);
    } finally {
      await r.close();
      void broken.cleanup();
    }
  });
});

describe("IPv4 addresses inside IPv6", () => {
  const hidden = ["http://[::127.0.0.1]/", "http://[::7f00:1]:8080/x", "http://[::10.0.0.1]/", "http://[::ffff:0:127.0.0.1]/", "http://[64:ff9b::127.0.0.1]/", "http://[64:ff9b:1::a00:1]/", "http://[2002:7f00:1::]/", "http://[::8.8.8.8]/", "http://[100::1]/"];

  it("http://[::127.0.0.1]/ and other embedded-IPv4 forms are refused when an http, poll or RSS applet is saved", async () => {
    const app = createTestApp();
    try {
      for (const url of hidden) {
        for (const definition of [
          webhookToHttp(url),
          { version: 1, trigger: { type: "poll", config: { url, path: "price", condition: "changed", interval_min: 5 } }, actions: webhookToHttp("https://status.test/status/200").actions },
          { version: 1, trigger: { type: "rss", config: { url } }, actions: webhookToHttp("https://status.test/status/200").actions },
        ]) {
          await expect(app.applets.create({ name: "x", definition }), `${definition.trigger.type} ${url}`).rejects.toThrow(/refusing private address/);
        }
      }
      // Global unicast IPv6 is still fine.
      expect((await app.applets.create({ name: "v6", definition: webhookToHttp("https://[2606:4700::1111]/") })).id).toBeTruthy();
    } finally {
      void app.cleanup();
    }
  });

  it("and at connect time, for a literal and for a DNS answer", async () => {
    const literal = createSafeFetch({ allowPrivate: false });
    await expect(literal("http://[::127.0.0.1]:9/")).rejects.toThrow(/refusing to connect to ::7f00:1 \(ipv4Compatible\)/);
    const resolving = createSafeFetch({ allowPrivate: false, lookup: async () => [{ address: "::ffff:0:7f00:1", family: 6 }] });
    await expect(resolving("http://rebind.example/")).rejects.toThrow(/refusing to connect to ::ffff:0:7f00:1/);
    for (const ip of ["::127.0.0.1", "::8.8.8.8", "::ffff:127.0.0.1", "64:ff9b::7f00:1", "fec0::1", "1::"]) expect(isPublicAddress(ip), ip).toBe(false);
    for (const ip of ["2606:4700::1111", "2001:4860:4860::8888", "::ffff:8.8.8.8", "8.8.8.8"]) expect(isPublicAddress(ip), ip).toBe(true);
  });
});

describe("import", () => {
  it("a guessable webhook token, an id with /.., a created_at that is not a date and enabled that is not a boolean are all refused at once, each with its path", async () => {
    const app = createTestApp();
    try {
      const good = JSON.parse(readFileSync("fixtures/export.json", "utf8")) as Record<string, unknown>[];
      const items = [
        { ...good[0], webhook_token: "abcdefgh12345678" },
        { ...good[1], id: "0192f3a0/../../settings" },
        { ...good[2], created_at: "yesterday", enabled: "yes" },
        { ...good[0], id: "0192f3a0-0000-7000-8000-00000000000a", webhook_token: "a".repeat(43), created_at: "2026-02-31T00:00:00Z" },
      ];
      let problems: { path: string; message: string }[] = [];
      try {
        await app.applets.import(items, false);
      } catch (err) {
        problems = (err as UserError).details ?? [];
      }
      expect(problems.map((p) => p.path)).toEqual(["0.webhook_token", "1.id", "2.created_at", "2.enabled", "3.webhook_token", "3.created_at"]);
      expect(problems[0]!.message).toMatch(/too weak to guard a public URL; use 43 or more characters/);
      expect(problems[1]!.message).toMatch(/is not a valid id: use 1 to 64 letters, digits, - and _/);
      expect(problems[2]!.message).toBe('must be an ISO 8601 date and time such as 2026-03-07T13:00:00.000Z, got "yesterday"');
      expect(await app.store.applets.list()).toEqual([]);
      // The export itself (tokens as whenthen makes them) still imports.
      expect((await app.applets.import(good, false)).created).toHaveLength(3);
    } finally {
      void app.cleanup();
    }
  });
});

describe("note action", () => {
  it("append refuses a file with a second hard link (planted inside NOTES_ROOT, pointing outside) and keeps refusing symbolic links", async () => {
    const dataDir = makeTempDir("whenthen-notes-");
    const notesRoot = path.join(dataDir, "notes");
    const outside = makeTempDir("whenthen-outside-");
    mkdirSync(notesRoot);
    const victim = path.join(outside, "profile.sh");
    writeFileSync(victim, "# precious\n");
    linkSync(victim, path.join(notesRoot, "journal.md"));
    symlinkSync(victim, path.join(notesRoot, "linked.md"));
    const ctx = createActionContext({ env: { DATA_DIR: dataDir, NOTES_ROOT: notesRoot } });
    const append = (filename: string) => noteAction.run(noteConfigSchema.parse({ filename, content: "rm -rf ~", mode: "append" }), ctx);
    await expect(append("journal.md")).rejects.toThrow(/has 2 hard links .* refusing to write through it/);
    await expect(append("linked.md")).rejects.toThrow(/is a symbolic link; refusing to write through it/);
    expect(readFileSync(victim, "utf8")).toBe("# precious\n");
    // A file of its own is appended to as before.
    const own = await append("own.md");
    expect(readFileSync((own.output as { path: string }).path, "utf8")).toBe("rm -rf ~");
    removeTempDirs();
  });
});
