import { EventEmitter, once } from "node:events";
import http from "node:http";
import net from "node:net";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test, vi, type MockInstance } from "vitest";
import { ActionError } from "@/lib/core/errors";
import { checkUrlForSave, createSafeFetch, isPublicAddress, type LookupFn } from "@/lib/net/safe-fetch";

/*
 * No public network exists here, so 127.0.0.2 stands in for "the internet": the test's `classify`
 * treats exactly that address as public (plus whatever isPublicAddress says), and the test's DNS
 * maps *.test names to it. Everything else on loopback stays private and must be refused.
 *
 * A guard on net.Socket.prototype.connect records every connect and throws for any host that is
 * not loopback or one of the test names, so even a regression cannot send a packet to 10.0.0.1 or
 * 169.254.169.254.
 */

const PUBLIC_STAND_IN = "127.0.0.2";
const classify = (ip: string) => ip === PUBLIC_STAND_IN || isPublicAddress(ip);

let target: http.Server; // 127.0.0.1: must never see a connection from a refused fetch
let targetPort = 0;
let targetConnections = 0;
let origin: http.Server; // 127.0.0.2: the "public" server that redirects
let originPort = 0;
const openResponses = new Set<http.ServerResponse>();
const endless = new EventEmitter(); // "closed" when the client cut an endless download

const lookupCalls: string[] = [];
const testLookup: LookupFn = async (hostname) => {
  lookupCalls.push(hostname);
  switch (hostname) {
    case "public.test":
    case "other.test":
      return [{ address: PUBLIC_STAND_IN, family: 4 }];
    case "loopback.test":
      return [{ address: "127.0.0.1", family: 4 }];
    case "mixed.test":
      return [
        { address: PUBLIC_STAND_IN, family: 4 },
        { address: "127.0.0.1", family: 4 },
      ];
    case "rebind.test":
      // First answer public, every later answer loopback: only the first may ever be used.
      return lookupCalls.filter((h) => h === "rebind.test").length === 1
        ? [{ address: PUBLIC_STAND_IN, family: 4 }]
        : [{ address: "127.0.0.1", family: 4 }];
    default:
      throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" });
  }
};

function listen(server: http.Server, host: string): Promise<number> {
  return new Promise((resolve) => server.listen(0, host, () => resolve((server.address() as AddressInfo).port)));
}

function close(server: http.Server): Promise<void> {
  for (const res of openResponses) res.destroy();
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

function readAll(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    let data = "";
    req.setEncoding("utf8");
    req.on("data", (c: string) => (data += c));
    req.on("end", () => resolve(data));
  });
}

beforeAll(async () => {
  target = http.createServer((_req, res) => res.end("private ok"));
  target.on("connection", () => targetConnections++);
  targetPort = await listen(target, "127.0.0.1");

  origin = http.createServer(async (req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    const body = await readAll(req);
    const redirect = (status: number, location: string) => {
      res.writeHead(status, { location });
      res.end();
    };
    if (url.pathname === "/redirect") return redirect(302, url.searchParams.get("to") ?? "/");
    const chain = /^\/chain\/(\d+)$/.exec(url.pathname);
    if (chain) {
      const n = Number(chain[1]);
      return n === 0 ? res.end("end of chain") : redirect(302, `/chain/${n - 1}`);
    }
    if (url.pathname === "/see-other") return redirect(303, "/echo");
    if (url.pathname === "/found") return redirect(302, "/echo");
    if (url.pathname === "/temporary") return redirect(307, "/echo");
    if (url.pathname === "/to-other") return redirect(302, `http://other.test:${originPort}/echo`);
    if (url.pathname === "/echo") {
      res.setHeader("content-type", "application/json");
      return res.end(JSON.stringify({ method: req.method, body, headers: req.headers }));
    }
    if (url.pathname === "/headers") {
      res.writeHead(200, [
        ["X-Multi", "one"],
        ["X-Multi", "two"],
        ["Set-Cookie", "a=1"],
        ["Set-Cookie", "b=2"],
        ["Content-Type", "text/plain"],
      ]);
      return res.end("h");
    }
    if (url.pathname === "/exact") return res.end("x".repeat(1000));
    if (url.pathname === "/endless") {
      // Never ends: the client can only finish by cutting the connection.
      openResponses.add(res);
      res.writeHead(200, { "content-type": "text/plain" });
      const chunk = Buffer.alloc(16 * 1024, 97);
      const pump = () => {
        while (!res.destroyed && res.write(chunk));
        if (!res.destroyed) res.once("drain", pump);
      };
      res.on("close", () => {
        openResponses.delete(res);
        endless.emit("closed");
      });
      return pump();
    }
    if (url.pathname === "/hang") {
      openResponses.add(res);
      return;
    }
    if (url.pathname === "/hang-body") {
      openResponses.add(res);
      res.writeHead(200);
      res.write("partial");
      return;
    }
    res.end(`hello from ${req.headers.host}`);
  });
  originPort = await listen(origin, PUBLIC_STAND_IN);
});

afterAll(async () => {
  await close(origin);
  await close(target);
});

// Names whose test DNS answers are loopback only; a connect to any other name is blocked.
const LOOPBACK_NAMES = new Set(["public.test", "other.test", "rebind.test", "loopback.test", "mixed.test", "localhost"]);
let connectAttempts: string[] = [];
let connectSpy: MockInstance;

beforeEach(() => {
  targetConnections = 0;
  connectAttempts = [];
  lookupCalls.length = 0;
  const original = net.Socket.prototype.connect;
  connectSpy = vi.spyOn(net.Socket.prototype, "connect").mockImplementation(function (this: net.Socket, ...args: unknown[]) {
    const first = args[0];
    const options = Array.isArray(first) ? first[0] : first;
    const host =
      typeof options === "object" && options !== null
        ? String((options as { host?: string }).host ?? "localhost")
        : typeof args[1] === "string"
          ? args[1]
          : "localhost";
    connectAttempts.push(host);
    const allowed = LOOPBACK_NAMES.has(host) || host === "::1" || host.startsWith("127.");
    if (!allowed) throw new Error(`test guard: blocked a connect to ${host}`);
    return Reflect.apply(original, this, args) as net.Socket;
  });
});

afterEach(() => {
  connectSpy.mockRestore();
});

async function refusal(promise: Promise<unknown>): Promise<ActionError> {
  const err = await promise.then(
    () => {
      throw new Error("expected the fetch to be refused");
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ActionError);
  return err as ActionError;
}

const withPort = (url: string) => url.replace("{P}", String(targetPort));
// `{P}` is the private server's port, only known once it listens (after the tables are collected).
const PRIVATE_URLS: [string, string][] = [
  [`http://127.0.0.1:{P}/`, "127.0.0.1 (loopback)"],
  [`http://127.1:{P}/`, "127.0.0.1 (loopback)"],
  [`http://0:{P}/`, "0.0.0.0 (unspecified)"],
  [`http://2130706433:{P}/`, "127.0.0.1 (loopback)"],
  [`http://0x7f000001:{P}/`, "127.0.0.1 (loopback)"],
  [`http://0177.0.0.1:{P}/`, "127.0.0.1 (loopback)"],
  [`http://[::1]:{P}/`, "::1 (loopback)"],
  [`http://[::ffff:127.0.0.1]:{P}/`, "::ffff:7f00:1 (loopback)"],
  ["http://169.254.169.254/latest/meta-data/", "169.254.169.254 (linkLocal)"],
  ["http://10.0.0.1/", "10.0.0.1 (private)"],
  ["http://172.16.0.1/", "172.16.0.1 (private)"],
  ["http://192.168.1.1/", "192.168.1.1 (private)"],
  [`http://loopback.test:{P}/`, "127.0.0.1 (loopback)"],
  ["http://mixed.test:{P}/", "127.0.0.1 (loopback)"],
];

describe("refusals happen before any socket exists", () => {
  const fetcher = () => createSafeFetch({ allowPrivate: false, lookup: testLookup, classify });

  test.each(PRIVATE_URLS)("Limits/SSRF: refuses %s", async (template, why) => {
    const url = withPort(template);
    const err = await refusal(fetcher()(url, { timeoutMs: 2000 }));
    expect(err.message).toBe(`net: refusing to connect to ${why} for ${url}`);
    expect(err.retryable).toBe(false);
    expect(connectAttempts).toEqual([]);
    expect(targetConnections).toBe(0);
  });

  test("Limits/SSRF: real DNS for localhost is refused", async () => {
    const realDns = createSafeFetch({ allowPrivate: false });
    const err = await refusal(realDns(withPort("http://localhost:{P}/"), { timeoutMs: 2000 }));
    expect(err.message).toMatch(new RegExp(`^net: refusing to connect to (127\\.0\\.0\\.1|::1) \\(loopback\\) for http://localhost:${targetPort}/$`));
    expect(connectAttempts).toEqual([]);
    expect(targetConnections).toBe(0);
  });

  test("Limits/SSRF: a mixed answer with a genuinely public address is refused as a whole", async () => {
    const mixed: LookupFn = async () => [
      { address: "8.8.8.8", family: 4 },
      { address: "192.168.1.1", family: 4 },
    ];
    const err = await refusal(createSafeFetch({ allowPrivate: false, lookup: mixed })("http://mixed-real.test/"));
    expect(err.message).toBe("net: refusing to connect to 192.168.1.1 (private) for http://mixed-real.test/");
    expect(connectAttempts).toEqual([]);
  });

  test("Limits/SSRF: a per-request allowPrivate: false overrides an instance that allows private", async () => {
    const err = await refusal(createSafeFetch({ allowPrivate: true })(withPort("http://127.0.0.1:{P}/"), { allowPrivate: false }));
    expect(err.retryable).toBe(false);
    expect(targetConnections).toBe(0);
  });

  test("Limits/SSRF: non-http schemes are refused", async () => {
    const f = fetcher();
    for (const url of ["file:///etc/passwd", "ftp://example.com/", "gopher://127.0.0.1:70/"]) {
      const err = await refusal(f(url));
      expect(err.message).toMatch(/^net: refusing (file|ftp|gopher) URL/);
      expect(err.retryable).toBe(false);
    }
    expect(connectAttempts).toEqual([]);
  });
});

describe("redirects", () => {
  const fetcher = () => createSafeFetch({ allowPrivate: false, lookup: testLookup, classify });
  const via = (to: string) => `http://public.test:${originPort}/redirect?to=${encodeURIComponent(to)}`;

  test("Limits/SSRF: the public stand-in is reachable, with the Host header kept as the name", async () => {
    const res = await fetcher()(`http://public.test:${originPort}/`);
    expect(res.status).toBe(200);
    expect(res.text()).toBe(`hello from public.test:${originPort}`);
    expect(res.truncated).toBe(false);
    expect(connectAttempts).toEqual(["public.test"]);
  });

  test.each(PRIVATE_URLS)("Limits/SSRF: a public URL redirecting to %s is refused at the hop", async (template, why) => {
    const url = withPort(template);
    const err = await refusal(fetcher()(via(url), { timeoutMs: 2000 }));
    expect(err.message).toBe(`net: refusing to connect to ${why} for ${new URL(url).href}`);
    expect(err.retryable).toBe(false);
    expect(connectAttempts.every((h) => h === "public.test")).toBe(true);
    expect(targetConnections).toBe(0);
  });

  test("Limits/SSRF: a redirect to localhost (real DNS) is refused at the hop", async () => {
    const lookup: LookupFn = (host) => (host === "public.test" ? testLookup(host) : Promise.reject(new Error("unreachable")));
    const realLocalhost: LookupFn = (host) => (host === "localhost" ? import("node:dns").then((d) => d.promises.lookup(host, { all: true })) : lookup(host));
    const f = createSafeFetch({ allowPrivate: false, lookup: realLocalhost, classify });
    const err = await refusal(f(via(withPort("http://localhost:{P}/"))));
    expect(err.message).toMatch(/^net: refusing to connect to (127\.0\.0\.1|::1) \(loopback\)/);
    expect(targetConnections).toBe(0);
  });

  test("Limits/SSRF: a redirect to a non-http scheme is refused", async () => {
    const err = await refusal(fetcher()(via("file:///etc/passwd")));
    expect(err.message).toMatch(/^net: refusing file URL \(redirect from http:\/\/public\.test/);
  });

  test("Limits/SSRF: the socket is pinned to the checked address (DNS rebinding)", async () => {
    const res = await fetcher()(`http://rebind.test:${originPort}/`);
    expect(res.text()).toBe(`hello from rebind.test:${originPort}`);
    expect(lookupCalls).toEqual(["rebind.test"]);
    expect(targetConnections).toBe(0);
  });

  test("Limits/SSRF: three hops are followed, a fourth is an error", async () => {
    const f = fetcher();
    const ok = await f(`http://public.test:${originPort}/chain/3`);
    expect(ok.status).toBe(200);
    expect(ok.text()).toBe("end of chain");
    expect(ok.url).toBe(`http://public.test:${originPort}/chain/0`);

    const err = await refusal(f(`http://public.test:${originPort}/chain/4`));
    expect(err.message).toBe(`net: too many redirects (more than 3) for http://public.test:${originPort}/chain/1`);
    expect(err.retryable).toBe(false);

    const none = await refusal(f(`http://public.test:${originPort}/chain/1`, { maxRedirects: 0 }));
    expect(none.message).toMatch(/too many redirects \(more than 0\)/);
  });

  test("Limits/SSRF: 303 turns POST into GET without a body", async () => {
    const res = await fetcher()(`http://public.test:${originPort}/see-other`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: '{"a":1}',
    });
    const echo = JSON.parse(res.text()) as { method: string; body: string; headers: Record<string, string> };
    expect(echo.method).toBe("GET");
    expect(echo.body).toBe("");
    expect(echo.headers["content-type"]).toBeUndefined();
    expect(echo.headers["content-length"]).toBeUndefined();
  });

  test("Limits/SSRF: 302 turns POST into GET; 307 keeps the method and body", async () => {
    const f = fetcher();
    const found = JSON.parse((await f(`http://public.test:${originPort}/found`, { method: "POST", body: "x=1" })).text()) as { method: string; body: string };
    expect(found).toMatchObject({ method: "GET", body: "" });
    const kept = JSON.parse((await f(`http://public.test:${originPort}/temporary`, { method: "POST", body: "x=1" })).text()) as { method: string; body: string };
    expect(kept).toMatchObject({ method: "POST", body: "x=1" });
  });

  test("Limits/SSRF: credentials are dropped on a redirect to another origin and kept on the same origin", async () => {
    const f = fetcher();
    const headers = { Authorization: "Bearer t0ken", Cookie: "s=1", "X-Other": "kept" };
    const same = JSON.parse((await f(`http://public.test:${originPort}/found`, { headers })).text()) as { headers: Record<string, string> };
    expect(same.headers).toMatchObject({ authorization: "Bearer t0ken", cookie: "s=1", "x-other": "kept" });
    const other = JSON.parse((await f(`http://public.test:${originPort}/to-other`, { headers })).text()) as { headers: Record<string, string> };
    expect(other.headers.authorization).toBeUndefined();
    expect(other.headers.cookie).toBeUndefined();
    expect(other.headers["x-other"]).toBe("kept");
    expect(other.headers.host).toBe(`other.test:${originPort}`);
  });
});

describe("bounds and errors", () => {
  const fetcher = () => createSafeFetch({ allowPrivate: false, lookup: testLookup, classify });

  test("Limits/SSRF: the body is capped, marked truncated and the download stopped", async () => {
    const serverSawClose = once(endless, "closed", { signal: AbortSignal.timeout(2000) });
    const res = await fetcher()(`http://public.test:${originPort}/endless`, { maxBytes: 1000, timeoutMs: 5000 });
    expect(res.body.length).toBe(1000);
    expect(res.truncated).toBe(true);
    // Rejects (AbortError) if the client kept the connection and went on downloading.
    await expect(serverSawClose).resolves.toBeDefined();
  });

  test("Limits/SSRF: a body of exactly maxBytes is not truncated", async () => {
    const res = await fetcher()(`http://public.test:${originPort}/exact`, { maxBytes: 1000 });
    expect(res.body.length).toBe(1000);
    expect(res.truncated).toBe(false);
  });

  test("Limits/SSRF: the default cap is 64 KB", async () => {
    const res = await fetcher()(`http://public.test:${originPort}/endless`);
    expect(res.body.length).toBe(64 * 1024);
    expect(res.truncated).toBe(true);
  });

  test("Limits/SSRF: response headers are lowercased and repeated ones joined", async () => {
    const res = await fetcher()(`http://public.test:${originPort}/headers`);
    expect(res.headers["x-multi"]).toBe("one, two");
    expect(res.headers["set-cookie"]).toBe("a=1, b=2");
    expect(res.headers["content-type"]).toBe("text/plain");
  });

  test("Limits/SSRF: a server that never answers times out, retryable", async () => {
    const started = Date.now();
    const err = await refusal(fetcher()(`http://public.test:${originPort}/hang`, { timeoutMs: 200 }));
    expect(err.message).toBe(`net: timed out after 200 ms for http://public.test:${originPort}/hang`);
    expect(err.retryable).toBe(true);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  test("Limits/SSRF: a body that stalls times out too", async () => {
    const err = await refusal(fetcher()(`http://public.test:${originPort}/hang-body`, { timeoutMs: 200 }));
    expect(err.message).toMatch(/^net: timed out after 200 ms/);
    expect(err.retryable).toBe(true);
  });

  test("Limits/SSRF: a slow DNS answer counts against the timeout", async () => {
    const slow: LookupFn = () => new Promise(() => {});
    const err = await refusal(createSafeFetch({ allowPrivate: false, lookup: slow })("http://slow.test/", { timeoutMs: 100 }));
    expect(err.message).toBe("net: timed out after 100 ms for http://slow.test/");
    expect(err.retryable).toBe(true);
  });

  test("Limits/SSRF: DNS failure and connection refused are retryable", async () => {
    const dnsErr = await refusal(fetcher()("http://nowhere.test/"));
    expect(dnsErr.message).toBe("net: cannot resolve nowhere.test (ENOTFOUND) for http://nowhere.test/");
    expect(dnsErr.retryable).toBe(true);

    const closed = http.createServer();
    const port = await listen(closed, "127.0.0.1");
    await close(closed);
    const refusedErr = await refusal(createSafeFetch({ allowPrivate: true })(`http://127.0.0.1:${port}/`));
    expect(refusedErr.message).toMatch(/^net: ECONNREFUSED/);
    expect(refusedErr.retryable).toBe(true);
  });

  test("Limits/SSRF: a header with a newline (bad template output) is not retryable", async () => {
    const err = await refusal(fetcher()(`http://public.test:${originPort}/`, { headers: { "X-Bad": "a\r\nInjected: 1" } }));
    expect(err.retryable).toBe(false);
    expect(err.message).toMatch(/^net: invalid request for http:\/\/public\.test/);
  });

  test("Limits/SSRF: an invalid URL is not retryable", async () => {
    const err = await refusal(fetcher()("not a url"));
    expect(err.message).toBe('net: invalid URL "not a url"');
    expect(err.retryable).toBe(false);
  });
});

describe("allowPrivate", () => {
  test("Limits/SSRF: ALLOW_PRIVATE_URLS lets loopback through, in every spelling", async () => {
    const f = createSafeFetch({ allowPrivate: true, lookup: testLookup });
    for (const url of [`http://127.0.0.1:{P}/`, `http://127.1:{P}/`, `http://0x7f000001:{P}/`, `http://2130706433:{P}/`, `http://loopback.test:{P}/`]) {
      const res = await f(withPort(url));
      expect(res.status).toBe(200);
      expect(res.text()).toBe("private ok");
    }
    expect(targetConnections).toBeGreaterThan(0);
  });

  test("Limits/SSRF: a per-request allowPrivate: true reaches the local server", async () => {
    const res = await createSafeFetch({ allowPrivate: false })(withPort("http://127.0.0.1:{P}/"), { allowPrivate: true });
    expect(res.text()).toBe("private ok");
    expect(targetConnections).toBe(1);
  });
});

describe("address classification", () => {
  test.each([
    ["8.8.8.8", true],
    ["1.1.1.1", true],
    ["2606:4700:4700::1111", true],
    ["[2606:4700:4700::1111]", true],
    ["127.0.0.1", false],
    ["127.0.0.2", false],
    ["0.0.0.0", false],
    ["10.1.2.3", false],
    ["172.16.0.1", false],
    ["172.31.255.255", false],
    ["192.168.1.1", false],
    ["169.254.169.254", false],
    ["100.64.0.1", false],
    ["224.0.0.1", false],
    ["255.255.255.255", false],
    ["::1", false],
    ["::", false],
    ["::ffff:127.0.0.1", false],
    ["::ffff:8.8.8.8", true],
    ["fe80::1", false],
    ["fc00::1", false],
    ["fd12:3456::1", false],
    ["64:ff9b::a00:1", false],
    ["not an ip", false],
    ["", false],
  ])("Limits/SSRF: isPublicAddress(%j) is %s", (ip, expected) => {
    expect(isPublicAddress(ip)).toBe(expected);
  });

  test.each([
    ["https://hooks.slack.com/services/x", false, null],
    ["http://example.com:8080/feed.xml", false, null],
    ["http://93.184.215.14/", false, null],
    ["file:///etc/passwd", false, "URL scheme must be http or https, not file"],
    ["javascript:alert(1)", true, "URL scheme must be http or https, not javascript"],
    ["http://localhost:3000/", false, "refusing localhost: it is this machine; set ALLOW_PRIVATE_URLS=true to allow it"],
    ["http://LOCALHOST./", false, "refusing localhost: it is this machine; set ALLOW_PRIVATE_URLS=true to allow it"],
    ["http://app.localhost/", false, "refusing app.localhost: it is this machine; set ALLOW_PRIVATE_URLS=true to allow it"],
    ["http://127.1/", false, "refusing private address 127.0.0.1 (loopback); set ALLOW_PRIVATE_URLS=true to allow it"],
    ["http://0x7f000001/", false, "refusing private address 127.0.0.1 (loopback); set ALLOW_PRIVATE_URLS=true to allow it"],
    ["http://10.0.0.1/", false, "refusing private address 10.0.0.1 (private); set ALLOW_PRIVATE_URLS=true to allow it"],
    ["http://[::1]/", false, "refusing private address ::1 (loopback); set ALLOW_PRIVATE_URLS=true to allow it"],
    ["http://169.254.169.254/", false, "refusing private address 169.254.169.254 (linkLocal); set ALLOW_PRIVATE_URLS=true to allow it"],
    ["http://localhost:3000/", true, null],
    ["http://10.0.0.1/", true, null],
    ["not a url", false, 'invalid URL: "not a url"'],
  ])("Limits/SSRF: checkUrlForSave(%j, allowPrivate=%s)", (url, allowPrivate, expected) => {
    expect(checkUrlForSave(url, allowPrivate)).toBe(expected);
  });
});
