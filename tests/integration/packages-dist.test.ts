import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { builtinModules } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import ts from "typescript";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/**
 * The two libraries as someone outside this repository gets them: `pnpm pack` (which builds dist/
 * and swaps in publishConfig.exports), unpacked into a project's node_modules, imported by plain
 * Node — no tsx, no bundler, no TypeScript sources — and type-checked by a TypeScript project of
 * its own. Nothing is fetched: the tarballs, the peers and typescript come from this workspace.
 */
const root = path.resolve(import.meta.dirname, "../..");
const work = mkdtempSync(path.join(tmpdir(), "whenthen-pack-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const PACKAGES = { "@whenthen/schedules": "packages/schedules", "@vibedout/automations": "packages/automations" } as const;
type PackageName = keyof typeof PACKAGES;
const tarballs = {} as Record<PackageName, string>;

beforeAll(() => {
  for (const [name, dir] of Object.entries(PACKAGES) as [PackageName, string][]) {
    const out = path.join(work, "pack", name.replace(/[@/]/g, "_"));
    mkdirSync(out, { recursive: true });
    execFileSync("pnpm", ["pack", "--pack-destination", out], { cwd: path.join(root, dir), stdio: "pipe" });
    tarballs[name] = path.join(out, readdirSync(out).find((f) => f.endsWith(".tgz"))!);
  }
}, 240_000);

/**
 * A project with the packed packages unpacked into node_modules and `links` (dependency → the
 * directory a package manager would have installed, here the workspace's own copy) beside them.
 */
function project(name: string, packages: PackageName[], links: Record<string, string>): string {
  const dir = path.join(work, name);
  for (const pkg of packages) {
    const target = path.join(dir, "node_modules", pkg);
    mkdirSync(target, { recursive: true });
    execFileSync("tar", ["xzf", tarballs[pkg], "-C", target, "--strip-components=1"]);
  }
  for (const [dep, from] of Object.entries(links)) {
    mkdirSync(path.dirname(path.join(dir, "node_modules", dep)), { recursive: true });
    symlinkSync(from, path.join(dir, "node_modules", dep));
  }
  return dir;
}

/** Dependencies as the package's own node_modules has them (or the root's, for @types/node). */
const deps = (pkg: PackageName | "root", names: string[]): Record<string, string> =>
  Object.fromEntries(names.map((name) => [name, path.join(root, pkg === "root" ? "" : PACKAGES[pkg], "node_modules", name)]));

const runNode = (dir: string, code: string): string => {
  writeFileSync(path.join(dir, "main.mjs"), code);
  return execFileSync(process.execPath, ["main.mjs"], { cwd: dir, encoding: "utf8" });
};

/**
 * One booking through /d1 as its README shows it: migrate, store the rule, plan the event, write
 * the plan in one batch, sweep at its due time. Plain JavaScript, for a Node script and a Worker.
 */
const D1_FLOW = `async function d1Flow(db) {
  await applyAutomationsMigration(db);
  const rules = new D1RuleStore(db);
  await rules.put({ id: "r", enabled: true, trigger: { events: ["booking.created"] }, steps: [{ id: "email", action: "email.send", offset: "-24h", anchor: "startsAt" }] }, 0);
  const scheduler = new D1Scheduler(db);
  const at = Date.parse("2026-10-10T12:00:00Z");
  const plan = await planEvent(await rules.list(), { id: "e1", type: "booking.created", occurredAt: at, subject: { type: "booking", id: "b1", version: 0 }, payload: { startsAt: "2026-10-12T10:00:00-06:00" } }, at);
  await db.batch(scheduler.apply(plan));
  const sent = [];
  const report = await sweepDue({ scheduler, now: plan.runs[0].dueAt, clock: () => 0, loadRule: (id) => rules.get(id), actions: { "email.send": (run) => void sent.push(run.id) } });
  return { id: plan.runs[0].id, dueAt: new Date(plan.runs[0].dueAt).toISOString(), sent, done: report.done, status: (await scheduler.get(plan.runs[0].id)).status };
}`;
// The run id is the one the planner has always given these parts (deterministic, byte for byte).
const D1_FLOW_RESULT = { id: "run_9b4f294347d6a64e6439c6f22309779d", dueAt: "2026-10-11T16:00:00.000Z", sent: ["run_9b4f294347d6a64e6439c6f22309779d"], done: 1, status: "done" };

describe("the packages work outside the workspace, in plain Node", () => {
  it("@whenthen/schedules: packed, its entries load without TypeScript and a tick fires a cron slot once", () => {
    const dir = project("schedules-node", ["@whenthen/schedules"], deps("@whenthen/schedules", ["croner", "better-sqlite3"]));
    const out = runNode(
      dir,
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
    const dir = project("automations-node", ["@vibedout/automations"], deps("@vibedout/automations", ["@noble/hashes", "re2js", "better-sqlite3"]));
    const out = runNode(
      dir,
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

  it("@vibedout/automations without better-sqlite3 installed: the core and /d1 plan, store and sweep a run on a real D1", () => {
    // Only its dependency and miniflare (a real D1 in workerd); better-sqlite3 is an optional
    // peer that a D1 user does not install.
    const dir = project("automations-d1", ["@vibedout/automations"], deps("@vibedout/automations", ["@noble/hashes", "re2js", "miniflare"]));
    // What a package manager reads from the tarball: better-sqlite3 (and its types) may be left out.
    const manifest = JSON.parse(readFileSync(path.join(dir, "node_modules/@vibedout/automations/package.json"), "utf8"));
    expect(Object.keys(manifest.dependencies)).toEqual(["@noble/hashes", "re2js"]);
    expect(manifest.peerDependencies).toMatchObject({ "better-sqlite3": expect.any(String), "@types/better-sqlite3": expect.any(String) });
    expect(manifest.peerDependenciesMeta).toMatchObject({ "better-sqlite3": { optional: true }, "@types/better-sqlite3": { optional: true } });
    const out = runNode(
      dir,
      `import { Miniflare } from "miniflare";
       import { planEvent, sweepDue } from "@vibedout/automations";
       import { applyAutomationsMigration, D1RuleStore, D1Scheduler } from "@vibedout/automations/d1";
       await import("@vibedout/automations/types");
       let sqlite;
       try { import.meta.resolve("better-sqlite3"); sqlite = "installed"; } catch { sqlite = "absent"; }
       ${D1_FLOW}
       const mf = new Miniflare({ modules: true, script: "export default {}", d1Databases: ["DB"] });
       try {
         console.log(JSON.stringify({ sqlite, ...(await d1Flow(await mf.getD1Database("DB"))) }));
       } finally {
         await mf.dispose();
       }`,
    );
    expect(JSON.parse(out)).toEqual({ sqlite: "absent", ...D1_FLOW_RESULT });
  }, 120_000);

});

describe("the Workers-facing entries of @vibedout/automations, as packed", () => {
  it("., /d1 and /types import nothing from Node, down to their dependencies' files, and run in workerd (no nodejs_compat) on D1", () => {
    const dir = project("automations-workers", ["@vibedout/automations"], deps("@vibedout/automations", ["@noble/hashes", "re2js", "miniflare"]));
    const pkgDir = path.join(dir, "node_modules", "@vibedout/automations");
    const exportsMap = JSON.parse(readFileSync(path.join(pkgDir, "package.json"), "utf8")).exports as Record<string, { import: string }>;
    // Every file the entries load, named as workerd's module registry resolves an import: relative
    // to the importing module, a bare specifier too (wrangler would have bundled it in; here the
    // files stay as they were packed).
    const modules = new Map<string, string>();
    const fromDependency = new Set<string>();
    const otherImports: string[] = [];
    const noble = realpathSync(path.join(dir, "node_modules/@noble/hashes"));
    const nobleExports = JSON.parse(readFileSync(path.join(noble, "package.json"), "utf8")).exports as Record<string, string>;
    const re2js = realpathSync(path.join(dir, "node_modules/re2js"));
    const re2jsEntry = (JSON.parse(readFileSync(path.join(re2js, "package.json"), "utf8")).exports as { ".": { import: { default: string } } })["."].import.default;
    const visit = (file: string, name: string): void => {
      if (modules.has(name)) return;
      modules.set(name, file);
      for (const { fileName: spec } of ts.preProcessFile(readFileSync(file, "utf8"), true, true).importedFiles) {
        if (spec.startsWith(".")) visit(path.resolve(path.dirname(file), spec), path.posix.join(path.posix.dirname(name), spec));
        else if (spec.startsWith("@noble/hashes/")) {
          fromDependency.add(spec);
          // @noble/hashes maps each subpath to the file of the same name, so the names line up.
          const subpath = `./${spec.slice("@noble/hashes/".length)}`;
          expect(nobleExports[subpath]).toBe(subpath);
          visit(path.join(noble, subpath), path.posix.join(path.posix.dirname(name), spec));
        } else if (spec === "re2js") {
          // The conditions' pattern engine: one self-contained ES module.
          fromDependency.add(spec);
          visit(path.join(re2js, re2jsEntry), path.posix.join(path.posix.dirname(name), spec));
        } else otherImports.push(`${name} imports ${spec}${spec.startsWith("node:") || builtinModules.includes(spec) ? " (Node)" : ""}`);
      }
    };
    for (const entry of [".", "./d1", "./types"]) visit(path.join(pkgDir, exportsMap[entry]!.import), path.posix.join("node_modules/@vibedout/automations", exportsMap[entry]!.import));
    expect(otherImports).toEqual([]);
    expect([...fromDependency].sort()).toEqual(["@noble/hashes/sha2.js", "@noble/hashes/utils.js", "re2js"]);
    expect([...modules.keys()].filter((name) => name.includes("/@noble/hashes/")).length).toBeGreaterThan(2);

    // Those files and nothing else, in workerd without nodejs_compat: a Node global or module
    // anywhere in them fails the run.
    writeFileSync(path.join(dir, "modules.json"), JSON.stringify([...modules]));
    const worker = `import { planEvent, sweepDue } from "./node_modules/@vibedout/automations/dist/index.js";
      import { applyAutomationsMigration, D1RuleStore, D1Scheduler } from "./node_modules/@vibedout/automations/dist/d1.js";
      ${D1_FLOW}
      export default { async fetch(request, env) { return Response.json({ ...(await d1Flow(env.DB)), buffer: typeof Buffer }); } };`;
    const out = runNode(
      dir,
      `import { readFileSync } from "node:fs";
       import { Miniflare } from "miniflare";
       const modules = JSON.parse(readFileSync("modules.json", "utf8")).map(([name, file]) => ({ type: "ESModule", path: name, contents: readFileSync(file, "utf8") }));
       const mf = new Miniflare({ modulesRoot: process.cwd(), modules: [{ type: "ESModule", path: "worker.mjs", contents: ${JSON.stringify(worker)} }, ...modules], compatibilityDate: "2025-06-01", d1Databases: ["DB"] });
       try {
         const response = await mf.dispatchFetch("http://worker/");
         console.log(await response.text());
       } finally {
         await mf.dispose();
       }`,
    );
    expect(JSON.parse(out)).toEqual({ ...D1_FLOW_RESULT, buffer: "undefined" });
  }, 120_000);
});

/**
 * A consumer's own TypeScript file over every entry of both packages. Each `@ts-expect-error`
 * marks an assignment that must be refused: were a declaration to resolve to `any` (what
 * extensionless relative imports become under NodeNext with skipLibCheck), the line would be
 * accepted and tsc would report the directive as unused.
 */
const CONSUMER = `
import Database from "better-sqlite3";
import { planEvent, sweepDue, RetryableActionError, type Plan, type Rule, type Scheduler, type SweepReport } from "@vibedout/automations";
import type { PlannedRun, RuleEvent } from "@vibedout/automations/types";
import { automationsMigrationSql, D1Scheduler } from "@vibedout/automations/d1";
import { applyAutomationsMigration, SqliteRuleStore, SqliteScheduler } from "@vibedout/automations/sqlite";
import { automationRun } from "@vibedout/automations/drizzle";
import { nextRunAfter, ScheduleReconciler, type Schedule, type ScheduleReconcilerOptions, type TickSummary } from "@whenthen/schedules";
import { MemoryScheduleStore } from "@whenthen/schedules/memory";
import { SqliteScheduleStore } from "@whenthen/schedules/sqlite";
import { PostgresScheduleStore } from "@whenthen/schedules/postgres";
import { MysqlScheduleStore } from "@whenthen/schedules/mysql";
import { RedisScheduleStore } from "@whenthen/schedules/redis";

export const rule: Rule = { id: "r", enabled: true, trigger: { events: ["booking.created"] }, steps: [{ id: "email", action: "email.send", offset: "-24h", anchor: "startsAt" }] };
// @ts-expect-error a rule's steps are a list
export const badRule: Rule = { ...rule, steps: "email.send" };

const db = new Database(":memory:");
applyAutomationsMigration(db);
export const scheduler: Scheduler = new SqliteScheduler(db);
// @ts-expect-error a scheduler's claimDue is a method
export const notScheduler: Scheduler = { ...scheduler, claimDue: 1 };
// @ts-expect-error the sqlite store takes a better-sqlite3 Database, not a path
export const pathStore = new SqliteRuleStore("data/app.db");
// @ts-expect-error the D1 store takes the env.DB binding
export const d1 = new D1Scheduler("DB");

const event: RuleEvent = { id: "e1", type: "booking.created", occurredAt: 0, subject: { type: "booking", id: "b1", version: 0 }, payload: {} };
export const plan: Promise<Plan> = planEvent([rule], event, 0);
// @ts-expect-error the planner's time is epoch milliseconds
export const datePlan = planEvent([rule], event, new Date());
export async function firstDue(): Promise<number> {
  const run: PlannedRun | undefined = (await plan).runs[0];
  // @ts-expect-error a due time is a number
  const text: string = run!.dueAt;
  return text.length;
}
export const report: Promise<SweepReport> = sweepDue({ scheduler, loadRule: () => rule, actions: { "email.send": () => { throw new RetryableActionError("429", 60_000); } } });
// @ts-expect-error the migration is SQL text
export const migration: number = automationsMigrationSql();
export const column: string = automationRun.id.name;
// @ts-expect-error the run table has no such column
export const noColumn = automationRun.nope;

export const options: ScheduleReconcilerOptions = { adapter: new MemoryScheduleStore(), triggerFn: (s: Schedule) => s.target };
// @ts-expect-error a reconciler needs a triggerFn
export const noTrigger: ScheduleReconcilerOptions = { adapter: new MemoryScheduleStore() };
export const tick: Promise<TickSummary> = new ScheduleReconciler(options).tick(new Date());
export const next: Date = nextRunAfter({ cron: "0 9 * * *", timezone: "Europe/Berlin" }, new Date());
// @ts-expect-error the next run is a Date
export const nextText: string = nextRunAfter({ interval: "5m" }, new Date());
export const stores = [new SqliteScheduleStore({ database: ":memory:" }), new PostgresScheduleStore({ pool: "postgres://localhost/db" }), new MysqlScheduleStore({ pool: "mysql://localhost/db" }), new RedisScheduleStore({ redis: "redis://localhost" })];
// @ts-expect-error a pool or a connection string, not a port
export const badPool = new PostgresScheduleStore({ pool: 5432 });
// @ts-expect-error a better-sqlite3 Database or a path
export const badDatabase = new SqliteScheduleStore({ database: 42 });
`;

describe("the packages' declarations type-check in a TypeScript project outside the workspace", () => {
  const RESOLUTIONS = {
    NodeNext: { module: "NodeNext", moduleResolution: "NodeNext" },
    Bundler: { module: "ESNext", moduleResolution: "Bundler" },
  } as const;

  it.each(Object.keys(RESOLUTIONS) as (keyof typeof RESOLUTIONS)[])("a consumer with moduleResolution %s gets every entry's types, errors where it must and nowhere else", (resolution) => {
    const dir = project(`consumer-${resolution}`, ["@whenthen/schedules", "@vibedout/automations"], {
      ...deps("@whenthen/schedules", ["croner", "pg", "mysql2", "ioredis", "@types/pg"]),
      ...deps("@vibedout/automations", ["@noble/hashes", "re2js", "better-sqlite3", "@types/better-sqlite3", "drizzle-orm"]),
      ...deps("root", ["@types/node"]),
    });
    writeFileSync(path.join(dir, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
    writeFileSync(path.join(dir, "main.ts"), CONSUMER);
    const compilerOptions = { ...RESOLUTIONS[resolution], target: "ES2022", lib: ["ES2023", "DOM"], types: ["node"], strict: true, noEmit: true, skipLibCheck: false };
    writeFileSync(path.join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions, files: ["main.ts"] }));
    expect(existsSync(path.join(dir, "node_modules/@vibedout/automations/src")), "the tarball carries no sources").toBe(false);

    // tsc -p tsconfig.json, through the compiler API so that the diagnostics can be read per file:
    // every declaration file of the two packages and main.ts must be clean; errors inside other
    // libraries' own declarations (drizzle-orm's, under strict) are theirs and not counted.
    const config = ts.getParsedCommandLineOfConfigFile(path.join(dir, "tsconfig.json"), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: (d) => { throw new Error(ts.flattenDiagnosticMessageText(d.messageText, "\n")); } })!;
    const program = ts.createProgram(config.fileNames, config.options);
    const ours = program.getSourceFiles().filter((f) => f.fileName.startsWith(`${dir}/`) && /^(main\.ts|node_modules\/(@vibedout|@whenthen)\/)/.test(path.relative(dir, f.fileName)));
    const diagnostics = [
      ...config.errors,
      ...program.getOptionsDiagnostics(),
      ...program.getGlobalDiagnostics(),
      ...ours.flatMap((f) => [...program.getSyntacticDiagnostics(f), ...program.getSemanticDiagnostics(f)]),
    ];
    const host = { getCanonicalFileName: (f: string) => f, getCurrentDirectory: () => dir, getNewLine: () => "\n" };
    expect(ts.formatDiagnostics(diagnostics, host)).toBe("");
    // Every entry's declarations were read from the tarballs (an entry that failed to resolve
    // would be missing here, and its names would be any).
    const read = ours.map((f) => path.relative(dir, f.fileName));
    for (const [name, pkgDir] of Object.entries(PACKAGES)) {
      const { exports } = JSON.parse(readFileSync(path.join(root, pkgDir, "package.json"), "utf8")).publishConfig as { exports: Record<string, { types: string }> };
      for (const target of Object.values(exports)) expect(read).toContain(path.join("node_modules", name, target.types));
    }
  }, 120_000);
});
