#!/usr/bin/env node
// The second half of `pnpm build` (after `next build`): bundles the composition roots (the web, the
// worker, and the launcher `pnpm start` runs, which is the web process starting the worker) and the
// server-side scripts into plain JavaScript under dist/, so production runs `node dist/server.mjs`
// and `node dist/worker.mjs` with no TypeScript loader in memory (tsx cost ~40 MB per process and
// a wrapper process each, measured in bench/RESULTS.md).
//
// What is bundled: our own code (`@/…`, relative imports) and the workspace packages, whose
// package.json exports point at TypeScript sources. What stays outside: every installed package
// (next, better-sqlite3, smtp-server, …), loaded from node_modules as usual. Code splitting keeps a
// module that the worker imports only when it needs it (the SMTP receiver, the Sheets client, the
// sandbox) in its own chunk, so its packages are loaded only then.
import { build } from "esbuild";
import { chmodSync, copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const outdir = path.join(root, "dist");
const workspace = /^@(whenthen|vibedout)\//;
// Pure ESM packages that tree-shake: bundled, so only the functions we call are loaded. date-fns-tz
// imports the whole date-fns index for one helper; from node_modules that cost the worker 28 MB
// of RSS, bundled it costs ~1 MB (bench/RESULTS.md, worker parts).
//
// A workspace package's own dependencies live in its node_modules, not the app's (pnpm does not
// hoist them), so `node dist/…` could not load them: they are bundled too (@vibedout/automations'
// @noble/hashes, which the timed actions' run ids use; pure ESM, a few KB).
const bundled = /^(date-fns|date-fns-tz|@noble\/hashes)(\/|$)/;

// Thread files are started from `new URL("./<file>", import.meta.url)`; in the bundle import.meta.url
// is a file in dist/. lib/sandbox/index.ts starts "./worker.mjs" (there the worker process's name),
// copied as sandbox-thread.mjs; lib/feeds/thread.ts starts "./thread-main.ts", bundled as the entry
// feed-thread.mjs. Each URL is pointed at its file in dist/.
const THREAD_URLS = [
  { module: /lib[\\/]sandbox[\\/]index\.ts$/, from: 'new URL("./worker.mjs", import.meta.url)', to: 'new URL("./sandbox-thread.mjs", import.meta.url)' },
  { module: /lib[\\/]feeds[\\/]thread\.ts$/, from: 'new URL("./thread-main.ts", import.meta.url)', to: 'new URL("./feed-thread.mjs", import.meta.url)' },
];
const threadUrls = {
  name: "thread-urls",
  setup(b) {
    for (const t of THREAD_URLS) {
      b.onLoad({ filter: t.module }, (args) => {
        const source = readFileSync(args.path, "utf8");
        if (!source.includes(t.from)) throw new Error(`build: ${args.path} no longer contains ${t.from}; update scripts/build-server.mjs`);
        return { contents: source.replace(t.from, t.to), loader: "ts" };
      });
    }
  },
};

const externals = {
  name: "node-modules-external",
  setup(b) {
    // Bare specifiers other than the path alias and the workspace packages stay imports.
    b.onResolve({ filter: /^[^./]/ }, (args) => {
      if (args.path.startsWith("@/") || workspace.test(args.path) || bundled.test(args.path)) return undefined;
      return { path: args.path, external: true };
    });
  },
};

rmSync(outdir, { recursive: true, force: true });
mkdirSync(outdir, { recursive: true });
const started = Date.now();
const result = await build({
  absWorkingDir: root,
  entryPoints: {
    server: "server.ts",
    worker: "worker/index.ts",
    // `pnpm start`: the web process that also starts the worker (lib/launcher).
    start: "start.ts",
    "reset-password": "scripts/reset-password.ts",
    cli: "cli/index.ts",
    "feed-thread": "lib/feeds/thread-main.ts",
  },
  outdir,
  outExtension: { ".js": ".mjs" },
  // Chunks beside the entries: the sandbox resolves its thread file relative to its own module.
  chunkNames: "[name]-[hash]",
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  tsconfig: path.join(root, "tsconfig.json"),
  sourcemap: "linked",
  // Readable stack traces and log lines: no minifying, names kept.
  keepNames: true,
  legalComments: "none",
  metafile: true,
  logLevel: "warning",
  plugins: [threadUrls, externals],
});
copyFileSync(path.join(root, "lib/sandbox/worker.mjs"), path.join(outdir, "sandbox-thread.mjs"));
// The package's `bin`: runnable as `whenthen` once linked (npm link, pnpm add -g .).
const cli = path.join(outdir, "cli.mjs");
writeFileSync(cli, `#!/usr/bin/env node\n${readFileSync(cli, "utf8")}`);
chmodSync(cli, 0o755);

const outputs = Object.entries(result.metafile.outputs).filter(([f]) => f.endsWith(".mjs"));
const kb = outputs.reduce((n, [, o]) => n + o.bytes, 0) / 1024;
console.log(`build: dist/ (${outputs.length} files, ${Math.round(kb)} KB of JavaScript) in ${Date.now() - started} ms`);
