import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";

/**
 * The two libraries as someone outside this repository gets them: `pnpm pack` (which builds dist/
 * and swaps in publishConfig.exports), unpacked into a project's node_modules, imported by plain
 * Node — no tsx, no bundler, no TypeScript sources.
 */
const root = path.resolve(import.meta.dirname, "../..");
const work = mkdtempSync(path.join(tmpdir(), "whenthen-pack-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

function install(pkgDir: string, name: string, deps: string[]): string {
  const project = path.join(work, name.replace(/[@/]/g, "_"));
  const out = path.join(project, "pack");
  mkdirSync(out, { recursive: true });
  execFileSync("pnpm", ["pack", "--pack-destination", out], { cwd: path.join(root, pkgDir), stdio: "pipe" });
  const tarball = readdirSync(out).find((f) => f.endsWith(".tgz"))!;
  const target = path.join(project, "node_modules", name);
  mkdirSync(target, { recursive: true });
  execFileSync("tar", ["xzf", path.join(out, tarball), "-C", target, "--strip-components=1"]);
  // Its dependencies and the peers the script uses, as a package manager would have installed them.
  for (const dep of deps) {
    mkdirSync(path.dirname(path.join(project, "node_modules", dep)), { recursive: true });
    symlinkSync(path.join(root, pkgDir, "node_modules", dep), path.join(project, "node_modules", dep));
  }
  return project;
}

const runNode = (project: string, code: string): string => {
  writeFileSync(path.join(project, "main.mjs"), code);
  return execFileSync(process.execPath, ["main.mjs"], { cwd: project, encoding: "utf8" });
};

describe("the packages work outside the workspace, in plain Node", () => {
  it("@whenthen/schedules: packed, its entries load without TypeScript and a tick fires a cron slot once", () => {
    const project = install("packages/schedules", "@whenthen/schedules", ["croner", "better-sqlite3"]);
    const out = runNode(
      project,
      `import { ScheduleReconciler, buildSchedule, ScheduleMemoryAdapter } from "@whenthen/schedules";
       import { SqliteScheduleStore } from "@whenthen/schedules/sqlite";
       const now = new Date("2026-03-08T05:00:00Z");
       const result = [];
       for (const store of [new ScheduleMemoryAdapter(), new SqliteScheduleStore({ database: ":memory:" })]) {
         await store.add(buildSchedule({ kind: "job", target: "x", cron: "0,30 2 * * *", timezone: "America/New_York", nextRunAt: now }, { now, generateId: () => store.generateId() }));
         const fired = [];
         await new ScheduleReconciler({ adapter: store, triggerFn: (s) => void fired.push(s.target) }).tick(now);
         result.push({ fired, next: (await store.list())[0].nextRunAt.toISOString() });
       }
       console.log(JSON.stringify(result));`,
    );
    expect(JSON.parse(out)).toEqual([
      { fired: ["x"], next: "2026-03-08T07:00:00.000Z" },
      { fired: ["x"], next: "2026-03-08T07:00:00.000Z" },
    ]);
  }, 120_000);

  it("@vibedout/automations: packed, the README's migration command and the better-sqlite3 entry run", () => {
    const project = install("packages/automations", "@vibedout/automations", ["@noble/hashes", "better-sqlite3"]);
    const out = runNode(
      project,
      `import Database from "better-sqlite3";
       import { parseRule, planEvent } from "@vibedout/automations";
       import { automationsMigrationSql } from "@vibedout/automations/d1";
       import { applyAutomationsMigration, SqliteRuleStore } from "@vibedout/automations/sqlite";
       const db = new Database(":memory:");
       applyAutomationsMigration(db);
       const parsed = parseRule({ id: "r", enabled: true, trigger: { events: ["booking.created"] }, steps: [{ action: "email.send", offset: "-24h", anchor: "startsAt" }] });
       const rules = new SqliteRuleStore(db);
       await rules.put(parsed.rule, 0);
       const plan = await planEvent(await rules.list(), { id: "e1", type: "booking.created", occurredAt: Date.parse("2026-10-10T12:00:00Z"), subject: { type: "booking", id: "b1", version: 0 }, payload: { startsAt: "2026-10-12T10:00:00-06:00" } }, Date.parse("2026-10-10T12:00:00Z"));
       console.log(JSON.stringify({ sql: automationsMigrationSql().startsWith("CREATE TABLE"), ok: parsed.ok, dueAt: new Date(plan.runs[0].dueAt).toISOString() }));`,
    );
    expect(JSON.parse(out)).toEqual({ sql: true, ok: true, dueAt: "2026-10-11T16:00:00.000Z" });
  }, 120_000);
});
