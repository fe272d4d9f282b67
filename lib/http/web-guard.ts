import type { IncomingMessage, ServerResponse } from "node:http";
import { LIMITS } from "../core/limits";
import { closeWhenUnread, refuseDeclaredOversize } from "./body";
import { createSecurityHeaders } from "./security-headers";

export type WebGuard = (req: IncomingMessage, res: ServerResponse) => boolean;

/**
 * What server.ts does to every request the lean ingress did not take, before Next sees it:
 * security headers (a nonce policy for pages, the strict one for the rest), a 413 for a declared
 * body larger than any route accepts, and a closed connection after an answer that left its body
 * unread. Returns true when it answered.
 */
export function createWebGuard(opts: { publicUrl: string; dev: boolean }): WebGuard {
  const headers = createSecurityHeaders(opts);
  return (req, res) => {
    const url = req.url ?? "/";
    if (url.startsWith("/api/") || url.startsWith("/_next/")) headers.api(res);
    else headers.page(req, res);
    closeWhenUnread(req, res);
    return refuseDeclaredOversize(req, res, LIMITS.importBodyBytes);
  };
}
