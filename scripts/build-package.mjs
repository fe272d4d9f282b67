#!/usr/bin/env node
// Builds the workspace package in the current directory for use outside this repository: each
// entry of `publishConfig.exports` is bundled by esbuild from its `src/` file into `dist/` (ESM;
// the package's dependencies and peers stay imports), and tsc writes the type declarations next to
// it. In the workspace the packages are used from source; `pnpm pack` / `pnpm publish` run this
// first (prepack) and swap `exports` for `publishConfig.exports`.
//
//   node ../../scripts/build-package.mjs            # from packages/<name>
import { execFileSync } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const dir = process.cwd();
const pkg = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8"));
// esbuild is the package's own devDependency, so it resolves from the package, not from here.
const { build } = createRequire(path.join(dir, "package.json"))("esbuild");
const published = pkg.publishConfig?.exports;
if (!published) throw new Error(`${pkg.name}: package.json has no publishConfig.exports to build`);

// "./dist/stores/sqlite.js" is built from "./src/stores/sqlite.ts".
const entryPoints = Object.values(published).map((target) => target.import.replace(/^\.\/dist\//, "src/").replace(/\.js$/, ".ts"));
const external = [...Object.keys(pkg.dependencies ?? {}), ...Object.keys(pkg.peerDependencies ?? {}), "node:*"];

rmSync(path.join(dir, "dist"), { recursive: true, force: true });
await build({
  absWorkingDir: dir,
  entryPoints,
  outbase: "src",
  outdir: "dist",
  bundle: true,
  splitting: true,
  chunkNames: "chunks/[name]-[hash]",
  format: "esm",
  // Node built-ins are imported as "node:…" and stay external; nothing else assumes a runtime.
  platform: "neutral",
  mainFields: ["module", "main"],
  target: "es2022",
  external,
  sourcemap: true,
  logLevel: "warning",
});

// Declarations only, from the entries (tsc follows their imports); the sources themselves are
// checked by the repository's typecheck.
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
execFileSync(
  process.execPath,
  [tsc, ...entryPoints, "--declaration", "--emitDeclarationOnly", "--rootDir", "src", "--outDir", "dist",
    "--target", "ES2022", "--module", "esnext", "--moduleResolution", "bundler", "--lib", "ES2023,DOM",
    "--types", "node", "--strict", "--skipLibCheck"],
  { cwd: dir, stdio: "inherit" },
);
console.log(`${pkg.name}: built ${entryPoints.length} entries into dist/`);
