import next from "next";
import { createWaitRoute } from "@/lib/http/wait-route";
import { WAIT_PATH } from "@/lib/waits/links";
import { createApi } from "@/lib/api";
import { createApp, waitForStore } from "@/lib/app";
import { loadEnvFile } from "@/lib/core/env-file";
import { listenErrorMessage } from "@/lib/core/listen-error";
import { createAppletService } from "@/lib/applets/service";
import { createAuth } from "@/lib/auth";
import { exitProcess } from "@/lib/core/exit";
import { collectWhenQuiet } from "@/lib/core/quiet-gc";
import { stampClientIp } from "@/lib/auth/client-ip";
import { startLiveUpdates } from "@/lib/bus/live";
import { watchHealth } from "@/lib/bus/health";
import { handleFileRequest } from "@/lib/files/serve";
import { createIngress } from "@/lib/http/ingress";
import { createMetricsRoute } from "@/lib/http/metrics";
import { createPageGate } from "@/lib/http/page-gate";
import { createWebServer } from "@/lib/http/server";
import { createWebGuard } from "@/lib/http/web-guard";
import { createSandbox } from "@/lib/sandbox";
import { publishServices } from "@/lib/services";

/**
 * Web composition root: one node:http server. Webhooks, health and signed files are answered by
 * the lean ingress and never enter Next.js; everything else goes to Next's request handler.
 */
loadEnvFile();
const dev = process.env.NODE_ENV !== "production";
const app = createApp({ role: "web" });
const log = app.log.child("web");
// PostgreSQL migrates and checks SECRETS_KEY / SESSION_SECRET against the database before anything
// is served; a mismatch ends the process here with the reason. A server that is away or refuses
// the login is waited for (one line per attempt, back-off), not exited on.
try {
  await waitForStore({ ...app, log });
} catch (err) {
  log.error(err instanceof Error ? err.message : String(err));
  await exitProcess(1);
}
// "Test filter" in the editor runs in this process; one small pool is enough.
const sandbox = createSandbox({ threads: 1 });
// First start with ADMIN_EMAIL/ADMIN_PASSWORD set: the admin exists before the first request.
const auth = createAuth(app);
await auth.ensureAdminFromEnv();
const api = createApi({ app, applets: createAppletService(app), sandbox, auth });
// Next's route handlers and pages run in this process but in their own module graph: they reach
// the services through lib/services.ts instead of opening a second database.
publishServices({ app, auth, api });

const ingress = createIngress(app, {
  "/api/files/": (req, res, url) => handleFileRequest(app, req, res, url.pathname, url.searchParams),
  // Wait steps' resume and approval links (lib/http/wait-route.ts).
  [WAIT_PATH]: createWaitRoute(app),
});
const webGuard = createWebGuard({ publicUrl: app.config.publicUrl, dev });
const pageGate = createPageGate(auth);
const metricsRoute = createMetricsRoute(app, auth);
const nextApp = next({ dev, dir: process.cwd(), hostname: app.config.host, port: app.config.port });
const handle = nextApp.getRequestHandler();

// The SSE bus learns of run changes made by workers (and other web processes): lib/bus/live.ts.
const live = startLiveUpdates(app, log);
// The banner on every page: the worker heartbeat and the SMTP receiver, watched here and pushed
// to every open page over the same stream.
const healthWatch = watchHealth(app);

// The port is taken before Next is ready, so a taken port fails at once with the variable to change,
// and webhooks are acknowledged while Next still prepares; pages wait for it.
const nextReady = nextApp.prepare();
// Start-up (Next's above all) grows the young generation; it is given back once things are quiet.
const quietGc = collectWhenQuiet();
const server = createWebServer((req, res) => {
  // The public hot paths first: they need no client address, and a webhook's stored headers are
  // then exactly the ones its sender sent.
  if (ingress(req, res)) return;
  if (webGuard(req, res)) return;
  // Login rate limiting keys on the connecting address; the API only sees a Web Request.
  stampClientIp(req, app.config.trustProxy);
  // GET /metrics for a scraper with an API token (never a page, never Next).
  if (metricsRoute(req, res)) return;
  pageGate(req, res).then(
    (answered) => {
      if (!answered) void nextReady.then(() => handle(req, res));
    },
    (err: unknown) => {
      log.error("page gate failed", { error: err instanceof Error ? err.message : String(err) });
      if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" });
      res.end("internal error");
    },
  );
});
server.once("error", (err) => {
  log.error(listenErrorMessage(err, "PORT", app.config.port, app.config.host));
  void exitProcess(1);
});
// Handled before anything is said or served: a stop as soon as "listening" is read is a clean one.
process.on("SIGTERM", shutdown);
process.on("SIGINT", shutdown);
server.listen(app.config.port, app.config.host, () => {
  log.info(`listening on ${app.config.publicUrl}`, { host: app.config.host, port: app.config.port, dev, data: app.config.dataDir });
});
await nextReady;
log.info("pages ready");

function shutdown() {
  live.stop();
  healthWatch.stop();
  quietGc.stop();
  server.close(() => {
    void sandbox.close();
    void app.close().then(() => exitProcess(0));
  });
  // Open streams (SSE, keep-alive) do not hold the stop longer than this.
  setTimeout(() => void exitProcess(0), 5000).unref();
}
