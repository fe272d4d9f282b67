import path from "node:path";
import { exitProcess } from "@/lib/core/exit";
import { launch } from "@/lib/launcher";

/**
 * A stand-in for the web root under the real launcher (tests/integration/launcher.test.ts): it
 * starts tests/helpers/launcher-child.ts beside itself and stops the way server.ts does, on its
 * own SIGTERM/SIGINT handler through exitProcess. WEB_STOP_CODE: the code its stop exits with;
 * WEB_FAIL_AFTER_MS: it fails by itself (exitProcess(2)) that long after start.
 */
const child = launch({ name: "web", child: { name: "worker", file: path.join(import.meta.dirname, "launcher-child.ts"), execArgv: ["--import", "tsx"] } });
const stop = (signal: string) => {
  process.stdout.write(`web got ${signal}\n`);
  setTimeout(() => void exitProcess(Number(process.env.WEB_STOP_CODE ?? 0)), 50);
};
process.on("SIGTERM", () => stop("SIGTERM"));
process.on("SIGINT", () => stop("SIGINT"));
process.stdout.write(`web started worker ${child.pid}\n`);
// One line written in two parts: prefixed once.
process.stdout.write("web writes a line ");
process.stdout.write("in two parts\n");
process.stderr.write("web warns\n");
if (process.env.WEB_FAIL_AFTER_MS) setTimeout(() => void exitProcess(2), Number(process.env.WEB_FAIL_AFTER_MS));
setInterval(() => {}, 60_000);
