import http from "node:http";
import type { AddressInfo } from "node:net";
import type { App } from "@/lib/app";
import { createIngress, type IngressHandler } from "@/lib/http/ingress";
import { createWaitRoute } from "@/lib/http/wait-route";
import { WAIT_PATH } from "@/lib/waits/links";

/**
 * The web process's ingress (webhooks, health, and with `waitLinks` the wait steps' resume and
 * approval links) on a real port, as the web process serves it; anything it does not take is 404.
 * `cleanups` gets the server's close.
 */
export async function serveIngress(app: App, cleanups: (() => unknown)[], opts: { waitLinks?: boolean } = {}): Promise<{ base: string; ingress: IngressHandler }> {
  const ingress = createIngress(app, opts.waitLinks ? { [WAIT_PATH]: createWaitRoute(app) } : undefined);
  const server = http.createServer((req, res) => {
    if (!ingress(req, res)) res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  cleanups.push(() => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))));
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, ingress };
}
