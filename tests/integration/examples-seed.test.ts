import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterEach, describe, expect, test } from "vitest";
import { createApi } from "@/lib/api";
import { APPLET_EXAMPLES } from "@/lib/applets/examples";
import { createApp } from "@/lib/app";
import { storedDefinition } from "@/lib/definition";
import { silentLogger } from "@/lib/core/log";
import { testIdentity } from "../helpers/auth";
import { createTestApp } from "../helpers/db";
import { forEachEngine } from "../helpers/engines";

/** Onboarding: a ready example becomes a disabled applet; `pnpm seed` seeds the same list. */

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

forEachEngine((engine) => {
  describe("ready examples", () => {
    test("POST /api/applets/from-example saves each example as a disabled applet with its definition (as a step list); an unknown key is a 404", async () => {
      const app = createTestApp({ engine });
      cleanups.push(() => app.cleanup());
      const api = createApi({ app, applets: app.applets, auth: testIdentity(app) });
      const post = async (body: unknown) => {
        const res = await api.handle(new Request("http://localhost/api/applets/from-example", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }));
        return { status: res.status, body: (await res.json()) as { applet?: { id: string; name: string; enabled: boolean }; error?: string } };
      };
      for (const e of APPLET_EXAMPLES) {
        const res = await post({ key: e.key });
        expect(res.status, e.key).toBe(201);
        expect(res.body.applet).toMatchObject({ name: e.name, enabled: false });
        const stored = (await app.store.applets.get(res.body.applet!.id))!;
        expect(stored.triggerType).toBe(e.triggerType);
        expect(stored.definition).toEqual(storedDefinition(e.definition({ inboundDomain: app.config.inboundDomain })));
      }
      // Disabled: nothing is scheduled to poll.
      expect(await app.store.triggerState.listScheduled({ types: ["schedule", "rss", "poll"] })).toEqual([]);
      expect(await post({ key: "nope" })).toEqual({ status: 404, body: { error: "no such example" } });
      expect((await post({})).status).toBe(400);
    });
  });
});

describe("pnpm seed seeds the ready examples", () => {
  test("the seed writes the examples of lib/applets/examples (same names, same definitions) with 20 runs, and a second run changes nothing", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "whenthen-seed-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const run = () => promisify(execFile)(process.execPath, ["--import", "tsx", "scripts/seed.ts"], { env: { ...process.env, DATA_DIR: dir, DATABASE_URL: "" }, cwd: path.resolve(import.meta.dirname, "../..") });
    const first = await run();
    expect(first.stdout).toContain(`${APPLET_EXAMPLES.length} applet(s) and 20 run(s)`);
    await run();
    const app = createApp({ env: { DATA_DIR: dir }, log: silentLogger });
    cleanups.push(() => app.close());
    const applets = await app.store.applets.list();
    expect(applets.map((a) => a.name).sort()).toEqual(APPLET_EXAMPLES.map((e) => e.name).sort());
    for (const e of APPLET_EXAMPLES) {
      const a = applets.find((x) => x.name === e.name)!;
      expect(a.definition, e.key).toEqual(storedDefinition(e.definition({ inboundDomain: app.config.inboundDomain })));
    }
    expect((await app.store.runs.list({ limit: 200 })).runs).toHaveLength(20);
  }, 120_000);
});
