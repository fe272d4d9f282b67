import type { Api } from "./api";
import type { App } from "./app";
import type { Auth } from "./auth";

/**
 * The one way pages, server actions and the API route handler reach the web process's services.
 * server.ts builds one App (database, bus, secrets), one Auth and one API per process and publishes
 * them here; Next compiles pages and route handlers into a module graph of its own, so importing
 * lib/app there would open a second database and miss the bus. The hand-over is a global, keyed by
 * a registered symbol so both module graphs see the same slot. Only type imports of server code
 * are allowed in this file.
 */
export interface WebServices {
  app: App;
  auth: Auth;
  api: Api;
}

const SLOT = Symbol.for("whenthen.web-services");
type Slot = { [SLOT]?: WebServices };

/** server.ts, once, before the first request. */
export function publishServices(services: WebServices): void {
  (globalThis as Slot)[SLOT] = services;
}

export function services(): WebServices {
  const published = (globalThis as Slot)[SLOT];
  if (!published) {
    throw new Error("whenthen: services are not initialised; start the web process with server.ts (`pnpm dev` or `pnpm start`), not `next dev`");
  }
  return published;
}
