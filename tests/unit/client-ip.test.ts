import type { IncomingMessage } from "node:http";
import { describe, expect, test } from "vitest";
import { CLIENT_IP_HEADER, stampClientIp } from "@/lib/auth/client-ip";

const fakeRequest = (headers: Record<string, string>, remoteAddress = "172.18.0.5") =>
  ({
    headers: { ...headers },
    rawHeaders: Object.entries(headers).flat(),
    socket: { remoteAddress },
  }) as unknown as IncomingMessage;

describe("client address for login rate limits", () => {
  test("a client cannot supply its own address header", () => {
    const req = fakeRequest({ [CLIENT_IP_HEADER]: "1.2.3.4", "x-forwarded-for": "5.6.7.8" });
    stampClientIp(req);
    expect(req.headers[CLIENT_IP_HEADER]).toBe("172.18.0.5");
    expect(req.rawHeaders.filter((h) => h === "1.2.3.4")).toEqual([]);
  });

  test("behind a trusted proxy the address is the entry the proxy appended, not one the client forged", () => {
    const req = fakeRequest({ "x-forwarded-for": "6.6.6.6, 203.0.113.9" });
    stampClientIp(req, true);
    expect(req.headers[CLIENT_IP_HEADER]).toBe("203.0.113.9");
    const direct = fakeRequest({});
    stampClientIp(direct, true);
    expect(direct.headers[CLIENT_IP_HEADER]).toBe("172.18.0.5");
  });
});
