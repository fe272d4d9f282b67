import { headers } from "next/headers";
import type { Api } from "@/lib/api/router";
import type { App } from "@/lib/app";

/**
 * How pages and route handlers reach the services. server.ts builds one `App` (database, bus,
 * secrets) and one API per process and leaves them on globals; Next compiles pages into its own
 * module graph, so importing lib/app here would open a second database and miss the bus. Only type
 * imports of server code are allowed in this file.
 */
export interface Services {
  app: App;
  api: Api;
}

export function services(): Services {
  const g = globalThis as { __whenthen?: App; __whenthenApi?: Api };
  if (!g.__whenthen || !g.__whenthenApi) {
    throw new Error("whenthen: services are not initialised; start the web process with server.ts (`pnpm dev` or `pnpm start`), not `next dev`");
  }
  return { app: g.__whenthen, api: g.__whenthenApi };
}

/**
 * Calls the JSON API in-process with the visitor's cookies, so the API's own session check sees the
 * same person the page gate let in. For anything with logic (meta, applet detail); lists read repos.
 */
export async function apiJson<T>(path: string, init: { method?: string; body?: unknown } = {}): Promise<{ status: number; body: T }> {
  const { app, api } = services();
  const incoming = await headers();
  const h = new Headers({ accept: "application/json" });
  const cookie = incoming.get("cookie");
  if (cookie) h.set("cookie", cookie);
  if (init.body !== undefined) h.set("content-type", "application/json");
  const res = await api.handle(
    new Request(new URL(path, app.config.publicUrl), { method: init.method ?? "GET", headers: h, body: init.body === undefined ? undefined : JSON.stringify(init.body) }),
  );
  return { status: res.status, body: (await res.json()) as T };
}

/** Like apiJson, for calls a page cannot render without: a non-2xx answer is an error. */
export async function apiOk<T>(path: string): Promise<T> {
  const r = await apiJson<T & { error?: string }>(path);
  if (r.status < 200 || r.status >= 300) throw new Error(`whenthen: GET ${path} answered ${r.status}: ${r.body.error ?? "no detail"}`);
  return r.body;
}
