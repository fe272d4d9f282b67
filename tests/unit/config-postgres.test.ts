import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, test } from "vitest";
import { loadConfig } from "@/lib/core/config";

const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));
const temp = () => {
  const d = mkdtempSync(path.join(tmpdir(), "whenthen-config-pg-"));
  dirs.push(d);
  return d;
};
const KEY = Buffer.alloc(32, 3).toString("base64");
const URL = "postgres://app:pw@db.internal:5432/whenthen";

describe("DATABASE_URL=postgres://", () => {
  test("selects PostgreSQL with the pool size and the LISTEN URL (default: DATABASE_URL)", () => {
    const c = loadConfig({ DATA_DIR: temp(), DATABASE_URL: URL, SECRETS_KEY: KEY, SESSION_SECRET: "s", DATABASE_POOL_SIZE: "4" });
    expect(c.postgres).toEqual({ url: URL, listenUrl: URL, poolSize: 4 });
    const direct = "postgres://app:pw@db-direct:5432/whenthen";
    expect(loadConfig({ DATA_DIR: temp(), DATABASE_URL: URL, SECRETS_KEY: KEY, SESSION_SECRET: "s", DATABASE_LISTEN_URL: direct }).postgres).toEqual({ url: URL, listenUrl: direct, poolSize: 10 });
    expect(loadConfig({ DATA_DIR: temp() }).postgres).toBeUndefined();
  });

  test("on PostgreSQL a key that would be generated refuses to start, naming the key; none is written", () => {
    const dir = temp();
    expect(() => loadConfig({ DATA_DIR: dir, DATABASE_URL: URL, SESSION_SECRET: "s" })).toThrow(/on PostgreSQL SECRETS_KEY must be set \(the same value on every host\)/);
    expect(() => loadConfig({ DATA_DIR: dir, DATABASE_URL: URL, SECRETS_KEY: KEY })).toThrow(/on PostgreSQL SESSION_SECRET must be set/);
    expect(existsSync(path.join(dir, "SECRETS_KEY"))).toBe(false);
    expect(existsSync(path.join(dir, "SESSION_SECRET"))).toBe(false);
    // SQLite keeps generating them.
    loadConfig({ DATA_DIR: dir });
    expect(existsSync(path.join(dir, "SECRETS_KEY"))).toBe(true);
  });

  test("the key files of an install being moved are used as they are", () => {
    const dir = temp();
    writeFileSync(path.join(dir, "SECRETS_KEY"), KEY);
    writeFileSync(path.join(dir, "SESSION_SECRET"), "moved");
    const c = loadConfig({ DATA_DIR: dir, DATABASE_URL: URL });
    expect(c.secretsKey.toString("base64")).toBe(KEY);
    expect(c.sessionSecret).toBe("moved");
  });

  test("bad settings get a clear error", () => {
    expect(() => loadConfig({ DATA_DIR: temp(), DATABASE_URL: URL, SECRETS_KEY: KEY, SESSION_SECRET: "s", DATABASE_POOL_SIZE: "0" })).toThrow(/DATABASE_POOL_SIZE must be at least 1/);
    expect(() => loadConfig({ DATA_DIR: temp(), DATABASE_URL: URL, SECRETS_KEY: KEY, SESSION_SECRET: "s", DATABASE_LISTEN_URL: "mysql://x" })).toThrow(/DATABASE_LISTEN_URL must be a postgres:\/\/ URL/);
    expect(() => loadConfig({ DATA_DIR: temp(), DATABASE_URL: "mysql://x/y" })).toThrow(/DATABASE_URL "mysql:" is not supported; use file:.* or postgres:\/\//);
  });
});
