import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, test } from "vitest";
import { createApi, type Api } from "@/lib/api";
import { changeSummary, versionDiff } from "@/lib/applets/versions";
import type { Store } from "@/lib/db/store";
import { alertPolicy } from "@/lib/alerts/policy";
import { openPostgresStore } from "@/lib/db/store/postgres";
import { defaultPgMigrationsDir } from "@/lib/db/store/postgres/migrate";
import { openSqliteStore } from "@/lib/db/store/sqlite";
import { defaultMigrationsDir, openDatabase } from "@/lib/db/store/sqlite/client";
import { executeRun } from "@/lib/executor/run";
import { actionRegistry } from "@/lib/actions";
import { storedDefinition, topLevelActions } from "@/lib/definition";
import { TEST_USER, testIdentity } from "../helpers/auth";
import { createTestApp, webhookToHttp, type TestApp } from "../helpers/db";
import { forEachEngine, type TestEngine } from "../helpers/engines";
import { sentTo, useHttpMocks } from "../helpers/http";
import { startWorker } from "../helpers/worker";
import { TEST_POSTGRES_URL, createTestSchema, noPostgres } from "../helpers/postgres";

/** Version history of applets: every save is a version, runs link to theirs, restore is a new save. */

useHttpMocks();

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const URL_A = "https://status.test/status/200?v=a";
const URL_B = "https://status.test/status/200?v=b";
const URL_C = "https://status.test/status/200?v=c";

function setup(engine: TestEngine): { app: TestApp; api: Api } {
  const app = createTestApp({ engine });
  cleanups.push(() => app.cleanup());
  const api = createApi({ app, applets: app.applets, auth: testIdentity(app) });
  return { app, api };
}

type Definition = { actions: { config: { url?: string } }[] };
/** The answers these tests read, loosely: each route's fields by name. */
interface AnswerJson {
  [key: string]: unknown;
  applet: { id: string; version: number; name: string; enabled: boolean; definition: Definition };
  version: VersionItem & { definition: Definition; current: boolean };
  versions: VersionItem[];
  run: { status: string; applet_version: number | null };
  run_id: string;
  restored_from: number;
  error: string;
  problems: { path: string; message: string }[];
}

async function call(api: Api, method: string, path: string, body?: unknown): Promise<{ status: number; json: AnswerJson }> {
  const res = await api.handle(
    new Request(`http://localhost:3000${path}`, {
      method,
      headers: body === undefined ? {} : { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    }),
  );
  return { status: res.status, json: (await res.json()) as AnswerJson };
}

interface VersionItem {
  version: number;
  name: string;
  enabled: boolean;
  source: string;
  restored_from: number | null;
  author: { kind: string; label: string; text: string };
  created_at: string;
  summary: string;
}
const versionsOf = async (api: Api, id: string): Promise<VersionItem[]> => (await call(api, "GET", `/api/applets/${id}/versions`)).json.versions;
const urlOf = (definition: unknown) => topLevelActions(storedDefinition(definition))[0]!.config.url;

forEachEngine((engine) => {
  describe("version history of applets", () => {
    test("a version is recorded on every save through the API, by the signed-in user, newest first with what changed", async () => {
      const { app, api } = setup(engine);
      const created = await call(api, "POST", "/api/applets", { name: "Ping", definition: webhookToHttp(URL_A) });
      expect(created.status).toBe(201);
      const id = created.json.applet.id;
      expect(created.json.applet.version).toBe(1);
      app.clock.advance(60_000);
      expect((await call(api, "PUT", `/api/applets/${id}`, { definition: webhookToHttp(URL_B) })).json.applet.version).toBe(2);
      app.clock.advance(60_000);
      expect((await call(api, "PUT", `/api/applets/${id}`, { name: "Ping B" })).status).toBe(200);
      // Enable and disable are not saves: no version (each version records the enabled state its save wrote).
      expect((await call(api, "POST", `/api/applets/${id}/disable`)).status).toBe(200);

      const versions = await versionsOf(api, id);
      expect(versions.map((v) => [v.version, v.source, v.name, v.author.kind, v.author.label])).toEqual([
        [3, "save", "Ping B", "user", TEST_USER.email],
        [2, "save", "Ping", "user", TEST_USER.email],
        [1, "create", "Ping", "user", TEST_USER.email],
      ]);
      expect(versions.map((v) => v.created_at)).toEqual(["2026-03-07T12:02:00.000Z", "2026-03-07T12:01:00.000Z", "2026-03-07T12:00:00.000Z"]);
      expect(versions.map((v) => v.summary)).toEqual(["Renamed to “Ping B”", "Action 1 (http): url", "Created"]);
      // Each version holds the whole definition as saved.
      const v1 = (await call(api, "GET", `/api/applets/${id}/versions/1`)).json.version;
      const v2 = (await call(api, "GET", `/api/applets/${id}/versions/2`)).json.version;
      expect(urlOf(v1.definition)).toBe(URL_A);
      expect(urlOf(v2.definition)).toBe(URL_B);
      expect(v2.current).toBe(false);
      expect((await call(api, "GET", `/api/applets/${id}/versions/3`)).json.version.current).toBe(true);
      // A diff of the two shows the changed field, and nothing else.
      const diff = versionDiff(v1, v2);
      expect(diff.lines.filter((l) => l.kind === "del").map((l) => ("text" in l ? l.text.trim() : ""))).toEqual([`"url": "${URL_A}"`]);
      expect(diff.lines.filter((l) => l.kind === "add").map((l) => ("text" in l ? l.text.trim() : ""))).toEqual([`"url": "${URL_B}"`]);
    });

    test("the version row and the save commit together: a refused save stores no version", async () => {
      const { api } = setup(engine);
      const id = (await call(api, "POST", "/api/applets", { name: "Ping", definition: webhookToHttp(URL_A) })).json.applet.id;
      const refused = await call(api, "PUT", `/api/applets/${id}`, { definition: webhookToHttp("ftp://example.com/x") });
      expect(refused.status).toBe(400);
      expect((await versionsOf(api, id)).map((v) => v.version)).toEqual([1]);
    });

    test("import creates a version by the importing user; an export carries the current version only", async () => {
      const { app, api } = setup(engine);
      const id = (await call(api, "POST", "/api/applets", { name: "Ping", definition: webhookToHttp(URL_A) })).json.applet.id;
      await call(api, "PUT", `/api/applets/${id}`, { definition: webhookToHttp(URL_B) });
      const exported = (await call(api, "GET", `/api/export?applet_id=${id}`)).json as unknown as Record<string, unknown>[];
      expect(exported).toHaveLength(1);
      expect(Object.keys(exported[0]!).sort()).toEqual(["created_at", "definition", "enabled", "id", "name", "tags", "webhook_token"]);
      expect(urlOf(exported[0]!.definition)).toBe(URL_B);

      // Into another install: one version, the import, by whoever imported it.
      const other = setup(engine);
      expect((await call(other.api, "POST", "/api/import", exported)).json).toEqual({ created: [id], replaced: [] });
      const imported = await versionsOf(other.api, id);
      expect(imported.map((v) => [v.version, v.source, v.author.label, v.summary])).toEqual([[1, "import", TEST_USER.email, "Imported"]]);
      expect(urlOf((await call(other.api, "GET", `/api/applets/${id}/versions/1`)).json.version.definition)).toBe(URL_B);

      // Replacing an applet that exists here adds the import as its next version.
      app.clock.advance(1000);
      expect((await call(api, "POST", "/api/import?existing=replace", [{ ...exported[0], definition: webhookToHttp(URL_C) }])).json).toEqual({ created: [], replaced: [id] });
      const after = await versionsOf(api, id);
      expect(after.map((v) => [v.version, v.source, v.summary])).toEqual([
        [3, "import", "Action 1 (http): url"],
        [2, "save", "Action 1 (http): url"],
        [1, "create", "Created"],
      ]);
    });

    test("a duplicate starts its own history at version 1, by the user who duplicated", async () => {
      const { api } = setup(engine);
      const id = (await call(api, "POST", "/api/applets", { name: "Ping", definition: webhookToHttp(URL_A) })).json.applet.id;
      await call(api, "PUT", `/api/applets/${id}`, { definition: webhookToHttp(URL_B) });
      const copy = (await call(api, "POST", `/api/applets/${id}/duplicate`)).json.applet.id;
      expect((await versionsOf(api, copy)).map((v) => [v.version, v.source, v.author.label, v.summary, v.enabled])).toEqual([[1, "duplicate", TEST_USER.email, "Created as a copy", false]]);
    });

    test("a run records the version it ran with, and still links to it after later saves", async () => {
      const { app, api } = setup(engine);
      const worker = startWorker(app);
      cleanups.push(() => worker.stop());
      const id = (await call(api, "POST", "/api/applets", { name: "Ping", definition: webhookToHttp(URL_A) })).json.applet.id;
      await call(api, "PUT", `/api/applets/${id}`, { definition: webhookToHttp(URL_B) });
      const first = (await call(api, "POST", `/api/applets/${id}/test`, { body: { title: "one" } })).json.run_id;
      await worker.drain();
      expect(sentTo("status").map((r) => r.url)).toEqual([URL_B]);
      expect((await call(api, "GET", `/api/runs/${first}`)).json.run).toMatchObject({ status: "succeeded", applet_version: 2 });

      await call(api, "PUT", `/api/applets/${id}`, { definition: webhookToHttp(URL_C) });
      const second = (await call(api, "POST", `/api/applets/${id}/test`, { body: { title: "two" } })).json.run_id;
      await worker.drain();
      // The first run still names version 2, whose definition is the one it sent with.
      expect((await call(api, "GET", `/api/runs/${first}`)).json.run.applet_version).toBe(2);
      expect(urlOf((await call(api, "GET", `/api/applets/${id}/versions/2`)).json.version.definition)).toBe(URL_B);
      expect((await call(api, "GET", `/api/runs/${second}`)).json.run.applet_version).toBe(3);
      expect(sentTo("status").map((r) => r.url)).toEqual([URL_B, URL_C]);
    });

    test("a save landing between the claim and the executor's read: the run executes the version the claim recorded", async () => {
      const { app } = setup(engine);
      const a = await app.applets.create({ name: "Ping", definition: webhookToHttp(URL_A) });
      const { runId } = await app.applets.test(a.id, { body: {} });
      const claimed = (await app.store.runs.claim("w-race", app.clock.now()))!;
      expect(claimed.id).toBe(runId);
      expect(claimed.appletVersion).toBe(1);
      // The save commits after the claim, before the executor reads the applet.
      await app.applets.update(a.id, { definition: webhookToHttp(URL_B) });
      expect((await app.store.applets.get(a.id))!.version).toBe(2);
      const outcome = await executeRun({ app, actions: actionRegistry }, claimed);
      expect(outcome.status).toBe("succeeded");
      expect(sentTo("status").map((r) => r.url)).toEqual([URL_A]);
      expect((await app.store.runs.get(runId))!.appletVersion).toBe(1);
      // Queued behind the save, the next run is claimed with the new version and runs it.
      const next = (await app.applets.test(a.id, { body: {} })).runId;
      const claimedNext = (await app.store.runs.claim("w-race", app.clock.now()))!;
      expect([claimedNext.id, claimedNext.appletVersion]).toEqual([next, 2]);
      await executeRun({ app, actions: actionRegistry }, claimedNext);
      expect(sentTo("status").map((r) => r.url)).toEqual([URL_A, URL_B]);
    });

    test("restore works: it is a new save of the old version (so it is undoable), by the user, keeping the enabled state", async () => {
      const { app, api } = setup(engine);
      const id = (await call(api, "POST", "/api/applets", { name: "Ping", definition: webhookToHttp(URL_A) })).json.applet.id;
      await call(api, "PUT", `/api/applets/${id}`, { name: "Ping B", definition: webhookToHttp(URL_B) });
      await call(api, "POST", `/api/applets/${id}/disable`);
      app.clock.advance(5000);
      const restored = await call(api, "POST", `/api/applets/${id}/versions/1/restore`);
      expect(restored.status).toBe(200);
      expect(restored.json.restored_from).toBe(1);
      expect(restored.json.applet).toMatchObject({ version: 3, name: "Ping", enabled: false });
      expect(urlOf(restored.json.applet.definition)).toBe(URL_A);
      expect(urlOf((await app.store.applets.get(id))!.definition)).toBe(URL_A);
      const versions = await versionsOf(api, id);
      expect(versions[0]).toMatchObject({ version: 3, source: "restore", restored_from: 1, enabled: false, author: { label: TEST_USER.email } });
      expect(versions[0]!.summary).toBe("Restored version 1 (renamed to “Ping”; disabled; action 1 (http): url)");
      // Undo the restore: restore the version before it.
      await call(api, "POST", `/api/applets/${id}/versions/2/restore`);
      expect(urlOf((await app.store.applets.get(id))!.definition)).toBe(URL_B);
      expect((await versionsOf(api, id)).map((v) => v.version)).toEqual([4, 3, 2, 1]);
    });

    test("restore refuses a version that no longer validates, naming the field, and changes nothing", async () => {
      const { app, api } = setup(engine);
      const id = (await call(api, "POST", "/api/applets", { name: "Ping", definition: webhookToHttp(URL_A) })).json.applet.id;
      await call(api, "PUT", `/api/applets/${id}`, { definition: webhookToHttp(URL_B) });
      // Version 1 as an older release may have stored it: a field today's schema refuses.
      const old = { ...webhookToHttp(URL_A), actions: [{ type: "http", config: { url: URL_A, method: "BREW" } }] };
      expect(await app.store.applets.rewriteVersion(id, 1, old, app.clock.now().toISOString())).toBe(true);
      const refused = await call(api, "POST", `/api/applets/${id}/versions/1/restore`);
      expect(refused.status).toBe(400);
      expect(refused.json.error).toMatch(/^restore: version 1 no longer validates, nothing was restored: definition\.actions\.0\.config\.method: /);
      expect(refused.json.problems.map((p) => p.path)).toEqual(["definition.actions.0.config.method"]);
      expect((await versionsOf(api, id)).map((v) => v.version)).toEqual([2, 1]);
      expect(urlOf((await app.store.applets.get(id))!.definition)).toBe(URL_B);
    });

    test("version routes refuse a bad number naming it, and say which of applet or version is missing", async () => {
      const { api } = setup(engine);
      const id = (await call(api, "POST", "/api/applets", { name: "Ping", definition: webhookToHttp(URL_A) })).json.applet.id;
      for (const n of ["0", "abc", "-1", "1.5"]) {
        const bad = await call(api, "GET", `/api/applets/${id}/versions/${n}`);
        expect(bad.status, n).toBe(400);
        expect(bad.json.problems, n).toEqual([{ path: "n", message: "n must be a version number: 1, 2, 3 …" }]);
      }
      expect(await call(api, "GET", `/api/applets/${id}/versions/9`)).toEqual({ status: 404, json: { error: `applet ${id} has no version 9` } });
      expect(await call(api, "POST", `/api/applets/${id}/versions/9/restore`)).toEqual({ status: 404, json: { error: `applet ${id} has no version 9` } });
      expect(await call(api, "GET", "/api/applets/nope/versions")).toEqual({ status: 404, json: { error: "no such applet" } });
      expect(await call(api, "GET", "/api/applets/nope/versions/1")).toEqual({ status: 404, json: { error: "no such applet" } });
    });

    test("deleting an applet deletes its history", async () => {
      const { app, api } = setup(engine);
      const id = (await call(api, "POST", "/api/applets", { name: "Ping", definition: webhookToHttp(URL_A) })).json.applet.id;
      await call(api, "PUT", `/api/applets/${id}`, { definition: webhookToHttp(URL_B) });
      await call(api, "DELETE", `/api/applets/${id}`);
      expect(await app.store.applets.versions(id)).toEqual([]);
    });
  });
});

/** A copy of a migrations folder whose journal stops before the version-history migration: the release before it. */
function releaseBefore(dir: string, tag: string): string {
  const old = mkdtempSync(path.join(tmpdir(), "whenthen-old-migrations-"));
  cleanups.push(() => rmSync(old, { recursive: true, force: true }));
  cpSync(dir, old, { recursive: true });
  const journalFile = path.join(old, "meta", "_journal.json");
  const journal = JSON.parse(readFileSync(journalFile, "utf8")) as { entries: { tag: string }[] };
  expect(journal.entries.map((e) => e.tag)).toContain(tag);
  journal.entries = journal.entries.filter((e) => e.tag !== tag);
  writeFileSync(journalFile, JSON.stringify(journal));
  return old;
}

async function expectBackfilled(store: Store, runId: string) {
  const versions = await store.applets.versions("old");
  expect(versions).toEqual([
    {
      appletId: "old",
      version: 1,
      name: "From before",
      enabled: false,
      definition: webhookToHttp(URL_A),
      source: "backfill",
      restoredFrom: null,
      author: { kind: "system", id: null, label: "before version history" },
      createdAt: "2026-01-02T03:04:05.000Z",
    },
  ]);
  expect((await store.applets.get("old"))!.version).toBe(1);
  expect(changeSummary(null, versions[0]!)).toBe("The definition when version history began");
  // A run from before says nothing it does not know: which definition it ran with was never recorded.
  expect((await store.runs.get(runId))!.appletVersion).toBeNull();
}

describe("the migration gives every existing applet a first version, so history is never empty", () => {
  test("SQLite: an applet saved before version history has version 1 from its current definition after the upgrade", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "whenthen-18-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const file = path.join(dir, "app.db");
    // The older release's database (its store would not even prepare against it): rows by hand.
    const before = openDatabase(file, { migrationsDir: releaseBefore(defaultMigrationsDir(), "0007_applet_versions") });
    const sqlite = before.sqlite;
    expect(sqlite.prepare("SELECT name FROM sqlite_master WHERE name = 'applet_versions'").get()).toBeUndefined();
    sqlite
      .prepare("INSERT INTO applets (id, name, enabled, trigger_type, definition, webhook_token, created_at, updated_at) VALUES ('old', 'From before', 0, 'webhook', ?, 'old-token', ?, ?)")
      .run(JSON.stringify(webhookToHttp(URL_A)), "2026-01-01T00:00:00.000Z", "2026-01-02T03:04:05.000Z");
    sqlite.prepare("INSERT INTO events (id, applet_id, source, payload, received_at, created_at, updated_at) VALUES ('e1', 'old', 'webhook', '{}', 'x', 'x', 'x')").run();
    sqlite
      .prepare("INSERT INTO runs (id, applet_id, event_id, status, attempt, max_attempts, steps, created_at, updated_at) VALUES ('r1', 'old', 'e1', 'succeeded', 1, 1, '[]', 'x', 'x')")
      .run();
    before.close();
    const after = openSqliteStore({ file, alertPolicy });
    cleanups.push(() => after.close());
    await expectBackfilled(after, "r1");
  });

  test.skipIf(noPostgres !== null)(`PostgreSQL: an applet saved before version history has version 1 from its current definition after the upgrade${noPostgres ? ` (skipped: ${noPostgres})` : ""}`, async () => {
    const { schema, drop } = await createTestSchema("v18");
    cleanups.push(drop);
    const before = openPostgresStore({ url: TEST_POSTGRES_URL, schema, poolSize: 2, migrationsDir: releaseBefore(defaultPgMigrationsDir(), "0005_applet_versions"), alertPolicy });
    await before.ready();
    // The older release's SQL: no versions table, no applet_version column.
    await before.pool.query(
      "INSERT INTO applets (id, name, enabled, trigger_type, definition, webhook_token, created_at, updated_at) VALUES ('old', 'From before', 0, 'webhook', $1::json, 'old-token', $2, $3)",
      [JSON.stringify(webhookToHttp(URL_A)), "2026-01-01T00:00:00.000Z", "2026-01-02T03:04:05.000Z"],
    );
    await before.pool.query("INSERT INTO events (id, applet_id, source, payload, received_at, created_at, updated_at) VALUES ('e1', 'old', 'webhook', '{}', 'x', 'x', 'x')");
    await before.pool.query("INSERT INTO runs (id, applet_id, event_id, status, attempt, max_attempts, steps, created_at, updated_at) VALUES ('r1', 'old', 'e1', 'succeeded', 1, 1, '[]', 'x', 'x')");
    await before.close();
    const after = openPostgresStore({ url: TEST_POSTGRES_URL, schema, poolSize: 2, alertPolicy });
    cleanups.push(() => after.close());
    await after.ready();
    await expectBackfilled(after, "r1");
  });
});
