import { createServer, type RequestListener, type Server } from "node:http";

/**
 * The web process's one node:http server (server.ts; tests/helpers/web-process.ts is built the
 * same way), for the webhook ingress and everything behind it.
 *
 * A client may half-close its socket (shutdown for writing: `curl` over some proxies, scripts that
 * `socket.end()` after the request, HTTP/1.0 habits) and still wait for the answer. Node's default
 * (`httpAllowHalfOpen` false) ends the socket on the client's FIN: the request goes on, a webhook's
 * run is stored, and the answer is dropped, so a sender that retries on no answer stores it again.
 * With it on, Node answers and then ends the socket after the last response.
 */
export function createWebServer(handler: RequestListener): Server {
  const server = createServer(handler);
  // Undocumented but read by node:http's own socket 'end' handler since 0.x; the half-close test
  // (tests/integration/security-processes.test.ts) fails if a Node release stops honouring it.
  (server as Server & { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
  server.keepAliveTimeout = 65_000;
  return server;
}
