import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { createServer as createNetServer, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll } from "vitest";
import { findChromium } from "./chromium";

/**
 * The real app for browser tests: server.ts and worker/index.ts as child processes on a temporary
 * DATA_DIR and free ports, plus a local stand-in for the outside services the applets call.
 */

const chromium_ = findChromium();
export const CHROMIUM = chromium_.path;
export const hasChromium = CHROMIUM !== null;
export const SKIP_REASON = chromium_.reason;

export const ADMIN = { email: "admin@whenthen.test", password: "correct-horse-battery-1" };
const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, "../..");

export async function freePort(): Promise<number> {
  const srv = createNetServer();
  await new Promise<void>((resolve) => srv.listen(0, "127.0.0.1", resolve));
  const { port } = srv.address() as AddressInfo;
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}

export interface RunningApp {
  url: string;
  dataDir: string;
  /** The web process (server.ts), e.g. to read its memory from /proc. */
  webPid: number;
  /** Everything both processes printed, for failure messages. */
  output(): string;
  /** Stops the worker process (SIGTERM, a clean stop) and resolves when it is gone. */
  stopWorker(): Promise<void>;
  /** Starts a new worker process with the same environment (after `stopWorker`). */
  startWorker(): void;
  stop(): Promise<void>;
}

export async function startApp(extraEnv: Record<string, string> = {}): Promise<RunningApp> {
  const dataDir = mkdtempSync(path.join(tmpdir(), "whenthen-e2e-"));
  const port = await freePort();
  const smtpPort = await freePort();
  const url = `http://localhost:${port}`;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    // vitest runs with NODE_ENV=test; Next must run as the development server it is.
    NODE_ENV: "development",
    NEXT_TELEMETRY_DISABLED: "1",
    // Its own build folder, so a `pnpm dev` running in this checkout does not hold the dev lock.
    NEXT_DIST_DIR: ".next/e2e",
    DATA_DIR: dataDir,
    PORT: String(port),
    PUBLIC_URL: url,
    SMTP_INBOUND_PORT: String(smtpPort),
    ALLOW_PRIVATE_URLS: "true",
    ADMIN_EMAIL: ADMIN.email,
    ADMIN_PASSWORD: ADMIN.password,
    LOG_LEVEL: "warn",
    ...extraEnv,
  };
  let log = "";
  const spawnOne = (name: string, file: string): ChildProcess => {
    const child = spawn(process.execPath, ["--import", "tsx", file], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
    const add = (chunk: Buffer) => (log += chunk.toString().replace(/^/gm, `${name} | `));
    child.stdout.on("data", add);
    child.stderr.on("data", add);
    return child;
  };
  let worker = spawnOne("worker", "worker/index.ts");
  const web = spawnOne("web", "server.ts");

  const app: RunningApp = {
    url,
    dataDir,
    webPid: web.pid!,
    output: () => log,
    stopWorker: () => stopChild(worker),
    startWorker() {
      if (!gone(worker)) throw new Error("the worker is still running; stopWorker() first");
      worker = spawnOne("worker", "worker/index.ts");
    },
    async stop() {
      await Promise.all([stopChild(web), stopChild(worker)]);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };

  const gone = (c: ChildProcess) => c.exitCode !== null || c.signalCode !== null;
  const failIfExited = () => {
    if (gone(worker)) throw new Error(`the worker exited (${worker.exitCode ?? worker.signalCode})\n${log.slice(-4000)}`);
    if (gone(web)) throw new Error(`the web process exited (${web.exitCode ?? web.signalCode})\n${log.slice(-4000)}`);
  };
  try {
    // Healthy = the web process answers and the worker's heartbeat is fresh.
    await waitUntil(360_000, async () => {
      failIfExited();
      const res = await fetch(`${url}/api/health`).catch(() => null);
      return res?.status === 200;
    });
    // Next dev compiles a route on its first request; pay for the login page here, not in a test step.
    await waitUntil(120_000, async () => {
      failIfExited();
      const res = await fetch(`${url}/login`, { signal: AbortSignal.timeout(100_000) }).catch(() => null);
      return res?.status === 200;
    });
  } catch (err) {
    await app.stop();
    throw err;
  }
  return app;
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const done = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 8000);
  await done;
  clearTimeout(timer);
}

/** Polls `check` until it is true; for process start-up only (tests wait on what the page shows). */
async function waitUntil(timeoutMs: number, check: () => Promise<boolean>): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

export interface Received {
  path: string;
  body: string;
}

/**
 * Stand-in for Slack, Discord and ntfy on 127.0.0.1, reached through ALLOW_PRIVATE_URLS=true. The
 * path picks the behaviour: /ok answers Slack's `ok`, /fail a 400 (not retried), /down a 500
 * (retried), /hold waits until the test calls `release()`. It also serves a feed and a JSON price
 * for the RSS and poll triggers' "Fetch now".
 */
export class FakeServices {
  readonly received: Received[] = [];
  #server: Server;
  #held: (() => void)[] = [];
  #waiters: (() => void)[] = [];
  port = 0;

  constructor() {
    this.#server = createServer((req, res) => {
      let body = "";
      req.on("data", (c: Buffer) => (body += c.toString()));
      req.on("end", () => {
        const p = req.url ?? "/";
        if (p.startsWith("/feed.xml")) {
          res.writeHead(200, { "content-type": "application/rss+xml" });
          return res.end(readFileSync(path.join(ROOT, "fixtures/feeds/rss.xml")));
        }
        if (p.startsWith("/price.json")) {
          res.writeHead(200, { "content-type": "application/json" });
          return res.end(readFileSync(path.join(ROOT, "fixtures/poll/price-2-90.json")));
        }
        this.received.push({ path: p, body });
        const answer = () => {
          if (p.startsWith("/fail")) res.writeHead(400, { "content-type": "text/plain" }).end("invalid_payload");
          else if (p.startsWith("/down")) res.writeHead(500, { "content-type": "text/plain" }).end("upstream is down");
          else res.writeHead(200, { "content-type": "text/plain" }).end("ok");
        };
        if (p.startsWith("/hold")) {
          this.#held.push(answer);
          this.#waiters.splice(0).forEach((w) => w());
        } else answer();
      });
    });
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.#server.listen(0, "127.0.0.1", resolve));
    this.port = (this.#server.address() as AddressInfo).port;
    return this;
  }

  url(p: string): string {
    return `http://127.0.0.1:${this.port}${p}`;
  }

  /** Resolves once a request to /hold… is waiting. */
  async heldRequest(): Promise<void> {
    if (this.#held.length) return;
    await new Promise<void>((resolve) => this.#waiters.push(resolve));
  }

  release(): void {
    this.#held.splice(0).forEach((answer) => answer());
  }

  async stop(): Promise<void> {
    this.release();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM ?? undefined,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
}

/** A signed-in page. Page errors are collected so a test can assert there were none. */
export async function signedInPage(browser: Browser, app: RunningApp): Promise<{ page: Page; errors: string[] }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, baseURL: app.url, timezoneId: "Europe/Berlin", locale: "en-GB" });
  // The Next dev-mode badge is not part of the app: keep it out of the screenshots.
  await context.addInitScript(() => {
    document.addEventListener("DOMContentLoaded", () => {
      const style = document.createElement("style");
      style.textContent = "nextjs-portal { display: none !important; }";
      document.head.appendChild(style);
    });
  });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(e.message));
  // React reports hydration mismatches on the console, not as page errors.
  page.on("console", (m) => {
    if (m.type() === "error" && /hydrat/i.test(m.text())) errors.push(m.text());
  });
  page.setDefaultTimeout(60_000);
  // The editor asks before a page with unsaved changes unloads; a test that moves on means to.
  page.on("dialog", (d) => {
    if (d.type() === "beforeunload") void d.accept();
  });
  await page.goto("/login");
  await page.getByLabel("Email").fill(ADMIN.email);
  await page.getByLabel("Password").fill(ADMIN.password);
  // A click before hydration is a plain form post, which only renders the form again.
  await page.locator("form[data-hydrated]").waitFor();
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL((u) => !u.pathname.startsWith("/login"));
  return { page, errors };
}

export const SCREENSHOTS = path.join(HERE, "screenshots");

export async function screenshot(page: Page, name: string): Promise<void> {
  // The nav is sticky: from the top, a full-page capture shows it where a reader sees it.
  await page.evaluate(() => window.scrollTo(0, 0));
  // caret: "initial": hiding the caret means writing an inline style on every input, and on a page
  // that has not hydrated yet React then reports a hydration mismatch (seen on /runs under load).
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true, caret: "initial" });
}

/** What a browser suite runs against, started once before its tests (see `e2eSuite`). */
export interface E2eSuite {
  readonly app: RunningApp;
  readonly browser: Browser;
  /** The stand-in for the outside services; only with `fake: true`. */
  readonly fake: FakeServices;
}

/**
 * The app, a browser and (with `fake`) the outside services' stand-in, started before a suite's
 * tests and stopped after them; `env` is passed to the app, `ready` runs once all are up (to warm
 * the pages a dev server compiles on first request). Call it inside the suite's `describe`.
 */
export function e2eSuite(opts: { env?: Record<string, string>; fake?: boolean; ready?: (suite: E2eSuite) => Promise<void> } = {}): E2eSuite {
  let app: RunningApp | undefined;
  let browser: Browser | undefined;
  let fake: FakeServices | undefined;
  const started = <T>(what: string, value: T | undefined, hint = ""): T => {
    if (value === undefined) throw new Error(`e2e: the suite's ${what} is not started${hint}`);
    return value;
  };
  const suite: E2eSuite = {
    get app() {
      return started("app", app);
    },
    get browser() {
      return started("browser", browser);
    },
    get fake() {
      return started("fake services", fake, " (e2eSuite({ fake: true }))");
    },
  };
  beforeAll(async () => {
    if (opts.fake) fake = await new FakeServices().start();
    app = await startApp(opts.env);
    browser = await launchBrowser();
    await opts.ready?.(suite);
  }, 420_000);
  afterAll(async () => {
    await browser?.close();
    await app?.stop();
    await fake?.stop();
  }, 30_000);
  return suite;
}

/** POSTs JSON with the page's session and returns the answer's JSON; any status but 2xx throws with the body. */
export async function postJson<T>(page: Page, path: string, data: unknown): Promise<T> {
  const res = await page.request.post(path, { data });
  if (!res.ok()) throw new Error(`POST ${path}: ${res.status()} ${await res.text()}`);
  return (await res.json()) as T;
}
