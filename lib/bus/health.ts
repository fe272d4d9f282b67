import type { App } from "../app";
import { errorMessage } from "../core/errors";
import { healthBanner, sameBanner } from "../health";

/**
 * The web process's watch on the worker heartbeat and the SMTP receiver: it looks every
 * `intervalMs` (a quarter of WORKER_STALE_SECONDS, at most 5 s) and publishes the banner on the bus
 * when what it says changes, so every open page shows or hides it within the stale window plus
 * one look, without a reload. Two small reads a look (the heartbeat row and the live workers); the
 * queue is counted only while the worker looks stopped. Returns its stop function.
 */
export function watchHealth(app: Pick<App, "store" | "clock" | "config" | "bus" | "log">, opts: { intervalMs?: number } = {}): { look(): Promise<void>; stop(): void } {
  const intervalMs = opts.intervalMs ?? Math.max(250, Math.min(5_000, Math.floor(app.config.workerStaleMs / 4)));
  const log = app.log.child("health");
  let running: Promise<void> | null = null;
  const look = () =>
    (running ??= (async () => {
      try {
        const banner = await healthBanner(app);
        if (!sameBanner(app.bus.health(), banner) || app.bus.health() === null) app.bus.publishHealth(banner);
      } catch (err) {
        log.warn("could not check the worker heartbeat for the banner", { error: errorMessage(err) });
      } finally {
        running = null;
      }
    })());
  void look();
  const timer = setInterval(() => void look(), intervalMs);
  timer.unref();
  return { look, stop: () => clearInterval(timer) };
}
