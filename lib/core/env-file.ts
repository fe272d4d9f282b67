import { readFileSync } from "node:fs";
import path from "node:path";
import { parseEnv } from "node:util";

/**
 * Reads a `.env` file into the environment of a process that is about to load its config: the
 * web process, the worker and the scripts call this first. Order, highest first: the process
 * environment (also a variable set to an empty value), then the file, then the defaults in
 * lib/core/config.ts. The file is `ENV_FILE` when set, else `.env` in the working directory; a
 * missing default file is fine, a missing ENV_FILE is an error (it was asked for by name).
 *
 * Returns the path read, or null when there was none.
 */
export function loadEnvFile(env: Record<string, string | undefined> = process.env, cwd = process.cwd()): string | null {
  const named = env.ENV_FILE;
  const file = path.resolve(cwd, named || ".env");
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT" && !named) return null;
    throw new Error(`config: cannot read ENV_FILE ${file}: ${(err as Error).message}`, { cause: err });
  }
  for (const [key, value] of Object.entries(parseEnv(text))) {
    if (env[key] === undefined) env[key] = value;
  }
  return file;
}
