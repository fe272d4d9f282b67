import type { App } from "../app";
import { createRedactor, redactingLogger } from "../secrets/redact";
import { renderTemplate } from "../template";
import type { PollContext } from "./types";

/**
 * What a trigger's poll and its "Fetch now" get: the shared services and a renderer with secrets.
 * One context per poll (or Fetch now): it remembers the secret values its templates used, so
 * `redact` can remove them from whatever the poll stores, logs or returns (a URL carrying
 * `?key={{secrets.X}}` shows up in every network error message), and its log does the same.
 */
export function pollContext(app: Pick<App, "http" | "clock" | "log" | "config" | "secrets">, opts: { signal?: AbortSignal } = {}): PollContext {
  const redactor = createRedactor();
  const { signal } = opts;
  return {
    // A scheduler tick's signal reaches every request its polls make: a worker told to stop does
    // not wait for a slow feed.
    http: signal ? (url, init) => app.http(url, { ...init, signal }) : app.http,
    clock: app.clock,
    log: redactingLogger(app.log.child("trigger"), redactor),
    config: app.config,
    render: async (template: string) => {
      const r = renderTemplate(template, { trigger: {}, secrets: await app.secrets.lookup() });
      redactor.add(r.secretsUsed);
      return r.value;
    },
    redact: <T>(value: T): T => redactor.redact(value),
  };
}
