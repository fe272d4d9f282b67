import type { IncomingMessage, ServerResponse } from "node:http";
import type { App } from "../app";
import type { Auth } from "../auth";
import { CLIENT_IP_HEADER } from "../auth/client-ip";
import { collectHealthFigures, renderMetrics } from "../metrics/collect";

export type MetricsRoute = (req: IncomingMessage, res: ServerResponse) => boolean;

/**
 * GET /metrics: the Prometheus text format (lib/metrics/collect), for a bearer API token only.
 * Any token made in Settings → API tokens passes, a read-only one is enough (and the one to give a
 * scraper: it cannot change anything). No token is 401, a bad one 401 and then the sign-in rate
 * limit per address (429), the same checks the API makes; a session cookie is not enough, so a
 * browser tab never exposes it. Answered before Next, like /api/health. Returns false for other paths.
 */
export function createMetricsRoute(app: Pick<App, "store" | "clock" | "config" | "log">, auth: Pick<Auth, "tokenAccess">): MetricsRoute {
  const log = app.log.child("metrics");
  return (req, res) => {
    const raw = req.url ?? "/";
    if (raw !== "/metrics" && !raw.startsWith("/metrics?")) return false;
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { allow: "GET, HEAD", "content-type": "application/json" });
      res.end(JSON.stringify({ error: "GET /metrics only" }));
      return true;
    }
    answer(req, res).catch((err: unknown) => {
      log.error("metrics failed", { error: err instanceof Error ? err.message : String(err) });
      if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: "internal error" }));
    });
    return true;
  };

  async function answer(req: IncomingMessage, res: ServerResponse) {
    const headers = new Headers();
    if (req.headers.authorization) headers.set("authorization", req.headers.authorization);
    const ip = req.headers[CLIENT_IP_HEADER];
    if (typeof ip === "string") headers.set(CLIENT_IP_HEADER, ip);
    const access = await auth.tokenAccess(new Request(new URL(req.url ?? "/metrics", app.config.publicUrl), { headers }));
    if (access === null) {
      res.writeHead(401, { "content-type": "application/json", "www-authenticate": 'Bearer realm="whenthen"', "cache-control": "no-store" });
      res.end(JSON.stringify({ error: "GET /metrics needs an API token: send Authorization: Bearer wt_…, made in Settings → API tokens (read-only is enough)" }));
      return;
    }
    if (access instanceof Response) {
      res.writeHead(access.status, Object.fromEntries(access.headers));
      res.end(await access.text());
      return;
    }
    const { contentType, body } = await renderMetrics(await collectHealthFigures(app));
    res.writeHead(200, { "content-type": contentType, "cache-control": "no-store", "content-length": Buffer.byteLength(body) });
    res.end(req.method === "HEAD" ? undefined : body);
  }
}
