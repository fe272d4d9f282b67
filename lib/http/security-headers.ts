import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";

/**
 * Response headers that keep the app out of other sites' frames and keep browsers from guessing,
 * on every answer: pages, the API, the lean ingress (webhooks, health, files) and redirects.
 *
 * - Pages get a Content-Security-Policy with a fresh nonce per response. Next reads the nonce from
 *   the request's own `content-security-policy` header and stamps it on every script it renders,
 *   so the policy is set there too; 'strict-dynamic' lets those scripts load Next's chunks. No
 *   'unsafe-eval' in production. `pnpm dev` needs 'unsafe-eval' (React's dev build rebuilds
 *   stacks with eval) and a WebSocket for hot reload, and gets both, in dev only.
 * - Everything else (JSON, files, webhooks) has nothing to run: `default-src 'none'`.
 * - `frame-ancestors 'none'` (and X-Frame-Options for old browsers) on all of it: SameSite=Lax does
 *   not stop a sibling subdomain or another port from framing the signed-in UI.
 * - Referrer-Policy `same-origin`, not `no-referrer`: with no-referrer a browser sends `Origin: null`
 *   on the UI's own POSTs, and the API's origin check would refuse them.
 * - Strict-Transport-Security only when PUBLIC_URL is https (TLS ends at Caddy in front).
 */
export interface SecurityHeaders {
  /** For every answer that is not a page. */
  api(res: ServerResponse): void;
  /** For a page: sets the nonce policy on the response and on the request (for Next). */
  page(req: IncomingMessage, res: ServerResponse): void;
}

const API_CSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

export function pageCsp(nonce: string, dev: boolean): string {
  return [
    "default-src 'self'",
    `script-src 'self' 'nonce-${nonce}' 'strict-dynamic'${dev ? " 'unsafe-eval'" : ""}`,
    // React's style={{…}} props are inline style attributes; styles cannot run code.
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "font-src 'self' data:",
    `connect-src 'self'${dev ? " ws: wss:" : ""}`,
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join("; ");
}

export function createSecurityHeaders(opts: { publicUrl: string; dev: boolean }): SecurityHeaders {
  const common: [string, string][] = [
    ["x-content-type-options", "nosniff"],
    ["referrer-policy", "same-origin"],
    ["x-frame-options", "DENY"],
  ];
  if (opts.publicUrl.startsWith("https:")) common.push(["strict-transport-security", "max-age=31536000"]);
  const api: [string, string][] = [...common, ["content-security-policy", API_CSP]];
  return {
    api(res) {
      for (const [name, value] of api) res.setHeader(name, value);
    },
    page(req, res) {
      const policy = pageCsp(randomBytes(16).toString("base64"), opts.dev);
      req.headers["content-security-policy"] = policy;
      for (const [name, value] of common) res.setHeader(name, value);
      res.setHeader("content-security-policy", policy);
    },
  };
}
