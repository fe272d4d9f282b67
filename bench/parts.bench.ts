/**
 * What each part costs in resident memory ( lean worker): a fresh `node` per part loads
 * it, collects garbage twice and reports RSS; the figure is the difference to a bare node started
 * the same way. The sandbox part starts the real filter sandbox (a worker thread with QuickJS) and
 * runs one filter. Median of three processes per part.
 */
import { execFileSync } from "node:child_process";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { root } from "./processes";
import type { BenchFigure } from "./types";

const measure = (code: string, args: string[] = []): number => {
  const script = `${code}
globalThis.gc(); await new Promise((r) => setTimeout(r, 300)); globalThis.gc();
console.log(process.memoryUsage().rss);
process.exit(0);`;
  const runs = [0, 1, 2].map(() => Number(execFileSync(process.execPath, ["--expose-gc", ...args, "--input-type=module", "-e", script], { cwd: root, encoding: "utf8" }).trim().split("\n").pop()) / 2 ** 20);
  return runs.sort((a, b) => a - b)[1]!;
};

const sandboxUrl = pathToFileURL(path.join(root, "dist/sandbox-thread.mjs")).href;

const PARTS: { name: string; code: string; args?: string[]; notes: string }[] = [
  { name: "better-sqlite3", code: `await import("better-sqlite3");`, notes: "both processes, always" },
  { name: "zod", code: `await import("zod");`, notes: "definitions and plug-in schemas, always" },
  { name: "smtp-server", code: `await import("smtp-server");`, notes: "worker, only with INBOUND_EMAIL (default on)" },
  { name: "mailparser", code: `await import("mailparser");`, notes: "worker, loaded with the first inbound message" },
  { name: "nodemailer", code: `await import("nodemailer");`, notes: "worker, loaded with the first email action" },
  { name: "rss-parser", code: `await import("rss-parser");`, notes: "worker, loaded with the first feed poll" },
  { name: "@googleapis/sheets", code: `await import("@googleapis/sheets");`, notes: "worker, loaded with the first Sheets action" },
  {
    name: "filter sandbox: one worker thread with QuickJS, one filter run",
    code: `const { Worker } = await import("node:worker_threads");
const w = new Worker(new URL(${JSON.stringify(sandboxUrl)}), { execArgv: [] });
await new Promise((r) => w.on("message", (m) => m.type === "ready" && r()));
w.postMessage({ type: "run", id: 1, code: "set('a', 1)", triggerJson: "{}", appletJson: '{"id":"a","name":"a"}', timeoutMs: 1000, memoryBytes: 33554432 });
await new Promise((r) => w.on("message", (m) => m.type === "result" && r()));`,
    notes: "worker (and web for Test filter), started with the first filter run; a pool has up to 2 threads",
  },
  { name: "date-fns-tz from node_modules (what tsx loads)", code: `await import("date-fns-tz");`, notes: "it imports the whole date-fns index; the build bundles only what is used" },
  { name: "drizzle-orm/better-sqlite3", code: `await import("drizzle-orm/better-sqlite3");`, notes: "no longer loaded at run time (nothing used the handle)" },
  { name: "tsx loader (--import tsx)", code: ``, args: ["--import", "tsx"], notes: "what every process paid before the compiled build" },
  { name: "next (the package, before prepare)", code: `await import("next");`, notes: "web only" },
];

export default async function bench(): Promise<BenchFigure[]> {
  const bare = measure("");
  const figures: BenchFigure[] = [{ name: "bare node (the baseline of the rows below)", unit: "MB", value: bare, notes: "RSS of `node -e` after two GCs" }];
  for (const p of PARTS) figures.push({ name: p.name, unit: "MB", value: measure(p.code, p.args) - bare, notes: p.notes });
  return figures;
}
