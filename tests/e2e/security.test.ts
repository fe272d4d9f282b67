import { createServer, request, type Server } from "node:http";
import { connect, type AddressInfo } from "node:net";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN, SKIP_REASON, hasChromium, launchBrowser, signedInPage, startApp, type RunningApp } from "./harness";

/**
 * Against the real web process (server.ts with Next, spawned by the harness): what an
 * attacker from outside reaches is the composed server, so that is what these tests attack.
 */
if (!hasChromium) console.warn(`tests/e2e/security.test.ts skipped: ${SKIP_REASON}`);

const MB = 1024 * 1024;

/**
 * Streams `total` bytes of body at `url` over a raw socket, as fast as the server takes them
 * (chunked, or with the length declared), reading whatever the server answers meanwhile, as curl
 * does: the answer may come, and the server close, long before the body is sent. Resolves with the
 * status (0 when none came), the answer's body and how much was written.
 */
function streamBody(url: string, total: number, declareLength: boolean): Promise<{ status: number; body: string; sent: number }> {
  const u = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(u.port), u.hostname);
    let received = "";
    let sent = 0;
    let closed = false;
    socket.on("data", (c: Buffer) => (received += c.toString("latin1")));
    socket.on("error", () => {}); // EPIPE/ECONNRESET once the server closes: expected
    socket.on("close", () => {
      closed = true;
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(received)?.[1] ?? 0);
      const head = received.indexOf("\r\n\r\n");
      let body = head < 0 ? "" : received.slice(head + 4);
      // A chunked answer: keep the first chunk's data.
      if (/transfer-encoding: chunked/i.test(received.slice(0, head))) body = body.slice(body.indexOf("\r\n") + 2).split("\r\n")[0] ?? "";
      resolve({ status, body, sent });
    });
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    const framed = declareLength ? chunk : Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from("\r\n")]);
    socket.once("connect", async () => {
      socket.write(
        `POST ${u.pathname} HTTP/1.1\r\nHost: ${u.host}\r\ncontent-type: application/json\r\n` +
          (declareLength ? `content-length: ${total}\r\n` : "transfer-encoding: chunked\r\n") +
          "\r\n",
      );
      while (sent < total && !closed && received === "") {
        sent += chunk.length;
        if (!socket.write(framed)) await new Promise((r) => socket.once("drain", r).once("close", r));
        // Let the answer in between writes.
        await new Promise((r) => setImmediate(r));
      }
      if (!closed) socket.end(declareLength ? "" : "0\r\n\r\n");
    });
  });
}

/** A request with a Host header of our choosing (fetch sets its own). */
function withHost(url: string, host: string, method = "GET", body?: string): Promise<{ status: number; text: string; headers: Record<string, string | string[] | undefined> }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { host };
    if (body !== undefined) headers["content-type"] = "application/json";
    const req = request(url, { method, headers }, (res) => {
      let text = "";
      res.on("data", (c: Buffer) => (text += c.toString()));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text, headers: res.headers }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

describe.skipIf(!hasChromium)("the security fixes against the running app", () => {
  let app: RunningApp | undefined;
  let browser: Browser | undefined;
  let framer: Server | undefined;

  beforeAll(async () => {
    // Its own Next build folder: the editor tests' dev server holds the lock on theirs.
    app = await startApp({ NEXT_DIST_DIR: ".next/e2e-security" });
    browser = await launchBrowser();
    // Pay for compiling the API route here, not inside a test.
    await fetch(`${app.url}/api/login`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}", signal: AbortSignal.timeout(120_000) });
  }, 480_000);

  afterAll(async () => {
    await browser?.close();
    await new Promise((r) => (framer ? framer.close(r) : r(null)));
    await app?.stop();
  }, 30_000);

  // The memory bound itself (RSS growth under 20 MB) is measured on a process without Next dev,
  // whose background compiling moves its RSS by tens of MB: tests/integration/security.test.ts.
  it("a 300 MB body streamed to POST /api/login (no cookie, no Origin) of the real server gets 413 long before its end, chunked or declared", async () => {
    for (const declareLength of [false, true]) {
      const r = await streamBody(`${app!.url}/api/login`, 300 * MB, declareLength);
      const how = declareLength ? "with Content-Length" : "chunked";
      expect(r.status, `${how}: ${r.body}`).toBe(413);
      expect(JSON.parse(r.body).error, how).toMatch(/request body larger than \d+ bytes/);
      // The server stopped taking the body: nothing past the limit was read, so nothing was held.
      expect(r.sent, how).toBeLessThan(50 * MB);
    }
    // And it still serves.
    expect((await fetch(`${app!.url}/api/health`)).status).toBe(200);
  }, 120_000);

  it("pages, API answers and the lean ingress send CSP with frame-ancestors 'none', nosniff and a Referrer-Policy; pages carry a per-response script nonce", async () => {
    const answers = {
      page: await fetch(`${app!.url}/login`),
      redirect: await fetch(`${app!.url}/runs`, { redirect: "manual" }),
      api: await fetch(`${app!.url}/api/session`),
      health: await fetch(`${app!.url}/api/health`),
      hook: await fetch(`${app!.url}/api/hooks/nope/nope`, { method: "POST" }),
    };
    for (const [what, res] of Object.entries(answers)) {
      const csp = res.headers.get("content-security-policy") ?? "";
      expect(csp, what).toContain("frame-ancestors 'none'");
      expect(res.headers.get("x-content-type-options"), what).toBe("nosniff");
      expect(res.headers.get("referrer-policy"), what).toBe("same-origin");
      expect(res.headers.get("x-frame-options"), what).toBe("DENY");
      // PUBLIC_URL is http here: no HSTS (it is sent behind https; see the integration test).
      expect(res.headers.get("strict-transport-security"), what).toBeNull();
    }
    expect(answers.redirect.status).toBe(302);
    expect(answers.api.headers.get("content-security-policy")).toMatch(/^default-src 'none'/);
    const pageCsp = answers.page.headers.get("content-security-policy")!;
    const nonce = /'nonce-([^']+)'/.exec(pageCsp)?.[1];
    expect(nonce).toBeTruthy();
    expect(pageCsp).toContain("'strict-dynamic'");
    // Every script Next rendered carries the nonce; a second response has a new one.
    const html = await answers.page.text();
    const scripts = [...html.matchAll(/<script\b[^>]*>/g)].map((m) => m[0]);
    expect(scripts.length).toBeGreaterThan(0);
    expect(scripts.filter((s) => !s.includes(`nonce="${nonce}"`))).toEqual([]);
    const again = (await fetch(`${app!.url}/login`)).headers.get("content-security-policy")!;
    expect(/'nonce-([^']+)'/.exec(again)?.[1]).not.toBe(nonce);
  }, 60_000);

  it("under that policy the signed-in UI hydrates and navigates with no CSP violation, and a page on another origin cannot frame it", async () => {
    const { page, errors } = await signedInPage(browser!, app!);
    const violations: string[] = [];
    page.on("console", (m) => {
      if (/Content Security Policy|Refused to (execute|load|apply|connect|evaluate)/i.test(m.text())) violations.push(m.text());
    });
    // Client-side navigation only happens once React has hydrated the nav.
    await page.getByRole("link", { name: "Runs" }).first().click();
    await page.waitForURL("**/runs");
    await page.getByRole("link", { name: "Settings" }).first().click();
    await page.waitForURL("**/settings");
    await page.getByRole("heading", { name: "Settings" }).first().waitFor();
    await page.goto("/applets/new");
    await page.getByTestId("trigger-card-webhook").click();
    await page.getByTestId("action-card-slack").waitFor();
    expect(violations).toEqual([]);
    expect(errors).toEqual([]);

    // Another origin (a sibling port on the same host is same-site, so SameSite=Lax sends the cookie).
    framer = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/html" });
      res.end(`<!doctype html><title>framer</title><iframe id="victim" src="${app!.url}/settings" width="800" height="600"></iframe>`);
    });
    await new Promise<void>((r) => framer!.listen(0, "127.0.0.1", r));
    const framing = await page.context().newPage();
    const blocked = framing.waitForEvent("console", { predicate: (m) => /frame-ancestors|Refused to frame/i.test(m.text()), timeout: 30_000 });
    await framing.goto(`http://127.0.0.1:${(framer.address() as AddressInfo).port}/`);
    expect((await blocked).text()).toMatch(/frame-ancestors 'none'/);
    const child = framing.frames().find((f) => f !== framing.mainFrame());
    // The refused frame shows the browser's error page, never the app.
    expect(await child?.locator("text=Settings").count()).toBe(0);
    await page.context().close();
  }, 240_000);

  it("a page or a session route addressed to a Host that is not PUBLIC_URL's is refused, and the page says which variable to set", async () => {
    const lanPage = await withHost(`${app!.url}/login`, "192.168.1.20:3000");
    expect(lanPage.status).toBe(403);
    expect(lanPage.text).toContain("PUBLIC_URL=http://192.168.1.20:3000");
    expect(lanPage.headers["content-security-policy"]).toContain("frame-ancestors 'none'");
    const rebound = await withHost(`${app!.url}/api/login`, "evil.example", "POST", JSON.stringify({ email: ADMIN.email, password: ADMIN.password }));
    expect(rebound.status).toBe(403);
    expect(rebound.headers["set-cookie"]).toBeUndefined();
    expect(JSON.parse(rebound.text).error).toContain("PUBLIC_URL");
    // Webhooks are not the UI: senders address them by whatever name reaches the server.
    expect((await withHost(`${app!.url}/api/health`, "evil.example")).status).toBe(200);
  }, 60_000);
});
