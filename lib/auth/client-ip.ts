import type { IncomingMessage } from "node:http";

/**
 * The API sees a Web Request (through Next), which has no socket. server.ts stamps the socket's
 * address into this header before handing the request on, after removing any copy the client sent,
 * so the value can be trusted as "the peer that connected to us". Behind a reverse proxy (Caddy in
 * docker-compose) that peer is the proxy.
 */
export const CLIENT_IP_HEADER = "x-whenthen-client-ip";

/**
 * `trustProxy` (TRUST_PROXY=true, set for the app behind Caddy in docker-compose): the address is
 * the last X-Forwarded-For entry, the one the proxy itself appended, so a client cannot choose it.
 */
export function stampClientIp(req: IncomingMessage, trustProxy = false): void {
  delete req.headers[CLIENT_IP_HEADER];
  // Next builds its request from `headers`, but strip the raw list too so no reader can see a
  // client-supplied value.
  const raw = req.rawHeaders;
  const kept: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) {
    if (raw[i]!.toLowerCase() !== CLIENT_IP_HEADER) kept.push(raw[i]!, raw[i + 1]!);
  }
  raw.splice(0, raw.length, ...kept);
  const forwarded = trustProxy ? String(req.headers["x-forwarded-for"] ?? "").split(",").pop()?.trim() : "";
  const ip = forwarded || req.socket.remoteAddress;
  if (ip) {
    req.headers[CLIENT_IP_HEADER] = ip;
    raw.push(CLIENT_IP_HEADER, ip);
  }
}

/** "unknown" when the request did not come through server.ts (tests that call the API directly). */
export const clientIpOf = (req: Request): string => req.headers.get(CLIENT_IP_HEADER) || "unknown";
