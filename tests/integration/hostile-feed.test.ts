import { fork, type ChildProcess } from "node:child_process";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { makeTempDir } from "../helpers/action-context";

/**
 * A feed is a document a stranger wrote. "Fetch now" of a hostile one, in a real web process: a
 * feed nesting 200,000 levels deep and one with more than a million elements are refused with a
 * message that says why, and the web process keeps answering /api/health meanwhile (the document
 * is read in a thread, bounded in depth, elements and time: lib/feeds/thread.ts, lib/feeds/read.ts).
 */

const DEEP_LEVELS = 200_000;
const WIDE_ELEMENTS = 1_200_000;
const feeds: Record<string, string> = {
  "/deep.xml": `<?xml version="1.0"?><rss version="2.0"><channel><title>Deep</title><item><title>${"<a>".repeat(DEEP_LEVELS)}${"</a>".repeat(DEEP_LEVELS)}</title></item></channel></rss>`,
  "/wide.xml": `<?xml version="1.0"?><rss version="2.0"><channel><title>Wide</title><item><title>x</title>${"<a/>".repeat(WIDE_ELEMENTS)}</item></channel></rss>`,
  "/good.xml": `<?xml version="1.0"?><rss version="2.0"><channel><title>Field Notes</title><item><title>Irrigation</title><guid>1</guid></item></channel></rss>`,
};

let feedServer: http.Server;
let feedBase: string;
let web: ChildProcess;
let base: string;
let cookie: string;

beforeAll(async () => {
  feedServer = http.createServer((req, res) => {
    const body = feeds[req.url ?? ""];
    if (!body) return void res.writeHead(404).end();
    res.writeHead(200, { "content-type": "application/rss+xml" }).end(body);
  });
  await new Promise<void>((r) => feedServer.listen(0, "127.0.0.1", r));
  feedBase = `http://127.0.0.1:${(feedServer.address() as AddressInfo).port}`;

  web = fork(path.resolve("tests/helpers/web-process.ts"), [], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, NODE_ENV: "test", DATA_DIR: makeTempDir("whenthen-hostile-feed-"), PUBLIC_URL: "http://localhost:3000", ALLOW_PRIVATE_URLS: "true", LOG_LEVEL: "error" },
    execArgv: ["--import", "tsx"],
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const port = await new Promise<number>((resolve, reject) => {
    web.once("message", (m) => resolve((m as { port: number }).port));
    web.once("exit", (code) => reject(new Error(`web process exited with ${code}`)));
  });
  base = `http://127.0.0.1:${port}`;
  const setup = await fetch(`${base}/api/setup`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email: "me@example.com", password: "correct horse battery" }) });
  expect(setup.status).toBe(201);
  cookie = (setup.headers.get("set-cookie") ?? "").split(";")[0]!;
}, 60_000);

afterAll(async () => {
  if (web && web.exitCode === null && web.signalCode === null) {
    const exited = new Promise((r) => web.once("exit", r));
    web.kill("SIGTERM");
    setTimeout(() => web.kill("SIGKILL"), 5_000).unref();
    await exited;
  }
  await new Promise<void>((r) => {
    feedServer?.closeAllConnections();
    feedServer?.close(() => r());
  });
});

async function fetchNow(feed: string): Promise<{ ok: boolean; error?: string; result?: { feed_title?: string } }> {
  const res = await fetch(`${base}/api/triggers/fetch`, {
    method: "POST",
    headers: { "content-type": "application/json", cookie },
    body: JSON.stringify({ type: "rss", config: { url: `${feedBase}${feed}` } }),
    // Long past what the bounds allow: a web process stuck in the document fails here instead of hanging the suite.
    signal: AbortSignal.timeout(40_000),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as { ok: boolean; error?: string };
}

/** /api/health asked again and again until `until` settles: the slowest answer, in ms. */
async function slowestHealthWhile(until: Promise<unknown>): Promise<{ slowest: number; asked: number }> {
  let done = false;
  void until.finally(() => (done = true)).catch(() => {});
  let slowest = 0;
  let asked = 0;
  while (!done) {
    const started = performance.now();
    const res = await fetch(`${base}/api/health`, { signal: AbortSignal.timeout(40_000) });
    await res.arrayBuffer();
    slowest = Math.max(slowest, performance.now() - started);
    asked++;
  }
  return { slowest, asked };
}

describe("a hostile feed fetched with Fetch now, in a real web process", () => {
  test("a normal feed is read (the thread that reads feeds works in this process)", async () => {
    expect(await fetchNow("/good.xml")).toMatchObject({ ok: true, result: { feed_title: "Field Notes" } });
  }, 30_000);

  test.each([
    ["/deep.xml", `nesting ${DEEP_LEVELS.toLocaleString("en-US")} levels`, /the feed nests deeper than 256 levels/],
    ["/wide.xml", `with ${WIDE_ELEMENTS.toLocaleString("en-US")} elements`, /the feed has more than 250,000 elements/],
  ])("%s (%s) is refused with a message saying why, and /api/health answers in under 200 ms meanwhile", async (feed, _what, reason) => {
    const answer = fetchNow(feed);
    const health = await slowestHealthWhile(answer);
    const fetched = await answer;
    expect(fetched.ok).toBe(false);
    expect(fetched.error).toMatch(/is not a readable feed/);
    expect(fetched.error).toMatch(reason);
    expect(health.asked).toBeGreaterThan(0);
    expect(health.slowest, `slowest /api/health of ${health.asked}: ${health.slowest.toFixed(0)} ms`).toBeLessThan(200);
  }, 60_000);
});
