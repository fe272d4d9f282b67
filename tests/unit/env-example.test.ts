import { mkdtempSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, test } from "vitest";
import { loadConfig } from "@/lib/core/config";

/**
 * .env.example is the list of settings a newcomer reads: it names every variable the app reads
 * (lib/core/config.ts and the few read beside it), nothing it does not read, and says what each
 * DATABASE_URL scheme does as the code does it.
 */
const example = readFileSync(".env.example", "utf8");
const documented = new Set([...example.matchAll(/^# ([A-Z][A-Z0-9_]+)=/gm)].map((m) => m[1]!));

/** The settings a source file reads: `env.NAME`, `process.env.NAME`, and names passed to config's readers. */
function readBy(file: string): string[] {
  const source = readFileSync(file, "utf8");
  return [...source.matchAll(/\benv\.([A-Z][A-Z0-9_]+)|(?:int|atLeast|bool)\(env, "([A-Z][A-Z0-9_]+)"|secret\("([A-Z][A-Z0-9_]+)"\)/g)].map((m) => (m[1] ?? m[2] ?? m[3])!);
}

// NODE_ENV is set by the scripts (`pnpm start` is production), not a setting.
const NOT_SETTINGS = new Set(["NODE_ENV"]);
// Read by scripts/backup.sh or by docker-compose.yml itself, and documented there too.
const READ_OUTSIDE_THE_APP = ["BACKUP_KEEP", "BACKUP_AT", "WHENTHEN_BACKUP_TOOL", "POSTGRES_PASSWORD"];

describe(".env.example says what the code reads", () => {
  test("every variable lib/core/config.ts (and the env file, migration and store modules) reads is in .env.example, and every one there is read", () => {
    const read = new Set(
      ["lib/core/config.ts", "lib/core/env-file.ts", "lib/db/store/sqlite/client.ts", "lib/db/store/postgres/migrate.ts"].flatMap(readBy).filter((n) => !NOT_SETTINGS.has(n)),
    );
    expect(read.size).toBeGreaterThan(30);
    expect([...read].filter((n) => !documented.has(n)).sort(), "read by the app but missing from .env.example").toEqual([]);
    expect([...documented].filter((n) => !read.has(n) && !READ_OUTSIDE_THE_APP.includes(n)).sort(), "in .env.example but read by nothing").toEqual([]);
    for (const name of READ_OUTSIDE_THE_APP) {
      expect(readFileSync("scripts/backup.sh", "utf8") + readFileSync("docker-compose.yml", "utf8")).toContain(name);
    }
  });

  test("DATABASE_URL: PostgreSQL is described as supported, and the URL shown for it is one the app takes", () => {
    expect(example).not.toMatch(/not supported/i);
    const shown = [...example.matchAll(/^# DATABASE_URL=(.+)$/gm)].map((m) => m[1]!);
    expect(shown).toContain("file:./data/app.db");
    const postgresUrl = shown.find((u) => u.startsWith("postgres://"));
    expect(postgresUrl).toBeDefined();
    const dataDir = mkdtempSync(path.join(os.tmpdir(), "whenthen-env-example-"));
    const key = Buffer.alloc(32, 7).toString("base64");
    expect(loadConfig({ DATA_DIR: dataDir, DATABASE_URL: postgresUrl, SECRETS_KEY: key, SESSION_SECRET: "s" }).postgres?.url).toBe(postgresUrl);
  });
});
