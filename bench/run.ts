/**
 * `pnpm bench [name …]`: runs bench/<name>.bench.ts (all of them by default), prints the figures,
 * and rewrites each bench's section of bench/RESULTS.md with the machine and the command.
 */
import { execSync } from "node:child_process";
import { existsSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Bench, BenchFigure } from "./types";

const dir = path.dirname(fileURLToPath(import.meta.url));
const resultsFile = path.join(dir, "RESULTS.md");
const all = readdirSync(dir)
  .filter((f) => f.endsWith(".bench.ts"))
  .map((f) => f.replace(/\.bench\.ts$/, ""))
  .sort();
const wanted = process.argv.slice(2).filter((a) => !a.startsWith("-"));
const unknown = wanted.filter((w) => !all.includes(w));
if (unknown.length) {
  console.error(`bench: unknown bench(es): ${unknown.join(", ")}; available: ${all.join(", ")}`);
  process.exit(2);
}
const names = wanted.length ? wanted : all;

const machine = `${os.cpus()[0]?.model ?? "unknown CPU"}, ${os.cpus().length} cores, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}, ${os.type()} ${os.release()}`;
let commit = "uncommitted";
try {
  commit = execSync("git rev-parse --short HEAD", { stdio: ["ignore", "pipe", "ignore"] }).toString().trim();
} catch {
  // not a git checkout
}

let failed = false;
for (const name of names) {
  console.log(`\n== ${name} ==`);
  const mod = (await import(path.join(dir, `${name}.bench.ts`))) as { default: Bench };
  const started = Date.now();
  const loadBefore = os.loadavg()[0]!;
  const figures = await mod.default();
  const load = { before: loadBefore, after: os.loadavg()[0]! };
  for (const f of figures) {
    const verdict = meets(f);
    if (verdict === false) failed = true;
    console.log(`${f.name}: ${format(f.value)} ${f.unit}${f.target ? `  (target ${f.target}: ${verdict ? "met" : "MISSED"})` : ""}${f.notes ? `  — ${f.notes}` : ""}`);
  }
  writeSection(name, figures, Math.round((Date.now() - started) / 1000), load);
}
console.log(`\nwrote ${path.relative(process.cwd(), resultsFile)}`);
process.exit(failed ? 1 : 0);

function meets(f: BenchFigure): boolean | undefined {
  const m = /^(>=|<=)\s*([\d.]+)/.exec(f.target ?? "");
  if (!m) return undefined;
  return m[1] === ">=" ? f.value >= Number(m[2]) : f.value <= Number(m[2]);
}

function format(v: number): string {
  return Math.abs(v) >= 100 ? Math.round(v).toLocaleString("en-US") : String(Math.round(v * 100) / 100);
}

function writeSection(name: string, figures: BenchFigure[], seconds: number, load: { before: number; after: number }) {
  // The settings that change what a bench does belong to its command line.
  const settings = Object.entries(process.env)
    .filter(([k]) => k.startsWith("BENCH_") && k !== "BENCH_CPU_PROF")
    .map(([k, v]) => `${k}=${v} `)
    .join("");
  const cores = os.cpus().length;
  const begin = `<!-- bench:${name} -->`;
  const end = `<!-- /bench:${name} -->`;
  const rows = figures
    .map((f) => `| ${f.name} | ${format(f.value)} ${f.unit} | ${f.target ?? ""} | ${f.target ? (meets(f) ? "met" : "**missed**") : ""} | ${f.notes ?? ""} |`)
    .join("\n");
  const section = `${begin}
## ${name}

Measured ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC at ${commit} with \`${settings}pnpm bench ${name}\` (${seconds} s) on ${machine}. Load average (1 min) ${load.before.toFixed(1)} at the start, ${load.after.toFixed(1)} at the end, on ${cores} cores${load.before > cores / 2 || load.after > cores / 2 ? ": other work was running, so timings are noisy; the same-run baseline is what to compare against" : ""}.

| what | value | target | | notes |
|---|---|---|---|---|
${rows}
${end}`;
  let text = existsSync(resultsFile)
    ? readFileSync(resultsFile, "utf8")
    : "# Benchmark results\n\nWritten by `pnpm bench` (bench/run.ts); each section is replaced when its bench runs again.\n";
  const re = new RegExp(`${begin}[\\s\\S]*?${end}`);
  text = re.test(text) ? text.replace(re, section) : `${text.trimEnd()}\n\n${section}\n`;
  writeFileSync(resultsFile, text);
}
