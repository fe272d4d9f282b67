/**
 * The web process's request path without Next's page renderer, as a child process for tests that
 * measure the process itself (its memory under an attack): the lean ingress, the web guard, the
 * client address, the page gate, then the real API handler, reached the way Next's route adapter
 * reaches it (a Web Request whose body is the IncomingMessage itself, duplex half:
 * next/dist/server/web/spec-extension/adapters/next-request.js). Next dev compiles and caches in
 * the background for minutes after a cold start, moving its RSS by tens of MB, which is noise a
 * memory bound of 20 MB cannot live with; this process has none.
 *
 * Like server.ts it serves signed attachment links (/api/files/) and feeds the SSE stream from the
 * store's run changes (lib/bus/live.ts: NOTIFY on PostgreSQL, polling on SQLite), so two of these
 * on one database behave as two web hosts.
 *
 * Reads DATA_DIR, PUBLIC_URL (and DATABASE_URL, the keys) from the environment; sends `{ port }`
 * to its parent when listening.
 */
import { createWaitRoute } from "@/lib/http/wait-route";
import { WAIT_PATH } from "@/lib/waits/links";
import type { AddressInfo } from "node:net";
import { Readable } from "node:stream";
import { createApi } from "@/lib/api";
import { createApp } from "@/lib/app";
import { createAppletService } from "@/lib/applets/service";
import { createAuth } from "@/lib/auth";
import { stampClientIp } from "@/lib/auth/client-ip";
import { startLiveUpdates } from "@/lib/bus/live";
import { handleFileRequest } from "@/lib/files/serve";
import { createIngress } from "@/lib/http/ingress";
import { createPageGate } from "@/lib/http/page-gate";
import { createWebServer } from "@/lib/http/server";
import { createWebGuard } from "@/lib/http/web-guard";

const app = createApp({ role: "web" });
// PostgreSQL: migrate and check the keys before serving, as server.ts does.
await app.store.ready?.();
const auth = createAuth(app);
const api = createApi({ app, applets: createAppletService(app), auth });
const ingress = createIngress(app, {
  "/api/files/": (req, res, url) => handleFileRequest(app, req, res, url.pathname, url.searchParams),
  // Wait steps' resume and approval links (lib/http/wait-route.ts).
  [WAIT_PATH]: createWaitRoute(app),
});
const live = startLiveUpdates(app, app.log.child("web"));
const webGuard = createWebGuard({ publicUrl: app.config.publicUrl, dev: false });
const pageGate = createPageGate(auth);

const server = createWebServer((req, res) => {
  if (ingress(req, res) || webGuard(req, res)) return;
  stampClientIp(req, app.config.trustProxy);
  void pageGate(req, res).then((answered) => {
    if (!answered) handleApi(req, res);
  });
});

function handleApi(req: import("node:http").IncomingMessage, res: import("node:http").ServerResponse) {
  const method = req.method ?? "GET";
  const request = new Request(new URL(req.url ?? "/", app.config.publicUrl), {
    method,
    headers: Object.entries(req.headers).flatMap(([k, v]) => (v === undefined ? [] : Array.isArray(v) ? v.map((x): [string, string] => [k, x]) : [[k, v] as [string, string]])),
    body: method === "GET" || method === "HEAD" ? null : (req as unknown as ReadableStream),
    duplex: "half",
  } as RequestInit);
  void api.handle(request).then((response) => {
    res.writeHead(response.status, Object.fromEntries(response.headers));
    if (response.body) Readable.fromWeb(response.body as import("node:stream/web").ReadableStream).pipe(res);
    else res.end();
  });
}
server.listen(0, "127.0.0.1", () => process.send?.({ port: (server.address() as AddressInfo).port }));
process.on("SIGTERM", () => {
  live.stop();
  server.closeAllConnections();
  server.close(() => void app.close().then(() => process.exit(0)));
});
