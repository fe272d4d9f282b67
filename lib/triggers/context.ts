import type { App } from "../app";
import { renderTemplate } from "../template";
import type { PollContext } from "./types";

/** What a trigger's poll and its "Fetch now" get: the shared services and a renderer with secrets. */
export function pollContext(app: Pick<App, "http" | "clock" | "log" | "config" | "secrets">): PollContext {
  return {
    http: app.http,
    clock: app.clock,
    log: app.log.child("trigger"),
    config: app.config,
    render: async (template: string) => renderTemplate(template, { trigger: {}, secrets: (n) => app.secrets.resolve(n) }).value,
  };
}
