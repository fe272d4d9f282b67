/**
 * Makes applets in the database the environment names (DATA_DIR, DATABASE_URL) and prints their
 * webhook paths as one JSON line. Run from a checkout with its own code (`node --import tsx
 * bench/servers/seed-applets.ts`), so a bench can seed an older build's database through that
 * build's own applet service. BENCH_APPLETS: JSON list of { name, definition }.
 */
import { createApp } from "@/lib/app";
import { createAppletService } from "@/lib/applets/service";
import { silentLogger } from "@/lib/core/log";

const applets = JSON.parse(process.env.BENCH_APPLETS ?? "[]") as { name: string; definition: unknown }[];
const app = createApp({ env: process.env, log: silentLogger });
await app.store.ready?.();
const service = createAppletService(app);
const hooks: string[] = [];
for (const a of applets) {
  const made = await service.create({ name: a.name, definition: a.definition });
  hooks.push(`/api/hooks/${made.id}/${made.webhookToken}`);
}
await app.close();
console.log(JSON.stringify(hooks));
