import { execFile } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { Worker } from "node:worker_threads";
import { afterEach, describe, expect, test } from "vitest";
import { loadConfig } from "@/lib/core/config";
import { makeTempDir, removeTempDirs } from "../helpers/action-context";

/**
 * The web process and the worker start at once on a new DATA_DIR (`pnpm start`, `pnpm dev`) and
 * both make or read DATA_DIR/SECRETS_KEY and SESSION_SECRET: one must never read the other's file
 * half written ("SECRETS_KEY must be 32 bytes base64 encoded, got 0 bytes", seen on a busy machine).
 */
afterEach(removeTempDirs);
const temp = () => makeTempDir("whenthen-config-secrets-");
const KEY = Buffer.alloc(32, 7).toString("base64");

describe("generated secrets in DATA_DIR", () => {
  test("a secret file another process has created but not yet written is waited for, not read as empty", async () => {
    const dir = temp();
    const file = path.join(dir, "SECRETS_KEY");
    writeFileSync(file, ""); // as another process leaves it between creating and writing
    // That process writes it 300 ms later, from another thread while this one reads.
    const writer = new Worker(`setTimeout(() => require("node:fs").writeFileSync(${JSON.stringify(file)}, ${JSON.stringify(KEY + "\n")}), 300);`, { eval: true });
    try {
      const c = loadConfig({ DATA_DIR: dir, SESSION_SECRET: "s" });
      expect(c.secretsKey.toString("base64")).toBe(KEY);
    } finally {
      await writer.terminate();
    }
  });

  test("a secret file left empty for good says what to do, naming the file", () => {
    const dir = temp();
    writeFileSync(path.join(dir, "SESSION_SECRET"), "");
    expect(() => loadConfig({ DATA_DIR: dir, SECRETS_KEY: KEY })).toThrow(/SESSION_SECRET is empty: set SESSION_SECRET in the environment, or delete the file/);
  });

  test("processes starting at once on a new DATA_DIR all read one and the same key, and leave no file of their own behind", async () => {
    const dir = temp();
    const config = path.resolve("lib/core/config.ts");
    const script = `import(${JSON.stringify(config)}).then((m) => { const c = m.loadConfig({ DATA_DIR: ${JSON.stringify(dir)} }); console.log(c.secretsKey.toString("base64") + " " + c.sessionSecret); })`;
    const run = promisify(execFile);
    const outs = await Promise.all(Array.from({ length: 6 }, () => run(process.execPath, ["--import", "tsx", "-e", script], { cwd: process.cwd() })));
    const seen = new Set(outs.map((o) => o.stdout.trim()));
    expect(seen.size).toBe(1);
    const [key] = [...seen][0]!.split(" ");
    expect(readFileSync(path.join(dir, "SECRETS_KEY"), "utf8").trim()).toBe(key);
    expect(readdirSync(dir).sort()).toEqual(["SECRETS_KEY", "SESSION_SECRET"]);
  }, 60_000);
});
