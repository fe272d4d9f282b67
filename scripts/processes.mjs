#!/usr/bin/env node
// Runs the web process and the worker together with prefixed, coloured output. `--prod` runs them
// with NODE_ENV=production (after `pnpm build`). Either one exiting stops the other.
import { spawn } from "node:child_process";

const prod = process.argv.includes("--prod");
const env = { ...process.env, NODE_ENV: prod ? "production" : process.env.NODE_ENV ?? "development", FORCE_COLOR: "1", NEXT_TELEMETRY_DISABLED: "1" };
const procs = [
  { name: "web   ", color: 36, args: ["server.ts"] },
  { name: "worker", color: 35, args: ["worker/index.ts"] },
];
const children = [];
let exiting = false;

for (const p of procs) {
  const child = spawn(process.execPath, ["--import", "tsx", ...p.args], { env, stdio: ["ignore", "pipe", "pipe"] });
  const prefix = `\x1b[${p.color}m${p.name} |\x1b[0m `;
  for (const stream of [child.stdout, child.stderr]) {
    let buf = "";
    stream.on("data", (chunk) => {
      buf += chunk;
      const lines = buf.split("\n");
      buf = lines.pop();
      for (const line of lines) process.stdout.write(prefix + line + "\n");
    });
  }
  child.on("exit", (code, signal) => {
    process.stdout.write(`${prefix}exited (${signal ?? code})\n`);
    stop(code ?? 1);
  });
  children.push(child);
}

function stop(code) {
  if (exiting) return;
  exiting = true;
  for (const c of children) if (c.exitCode === null) c.kill("SIGTERM");
  setTimeout(() => process.exit(code), 6000).unref();
  Promise.all(children.map((c) => (c.exitCode !== null ? null : new Promise((r) => c.on("exit", r))))).then(() => process.exit(code));
}
process.on("SIGINT", () => stop(0));
process.on("SIGTERM", () => stop(0));
