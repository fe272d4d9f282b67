import { defineConfig } from "tsdown";

/**
 * The published build (`pnpm build`; `pnpm pack` runs it as prepack): one ESM file and one bundled
 * declaration file per entry of publishConfig.exports, shared code in hashed chunks. The
 * declarations import each other as "./types.js", which `moduleResolution` NodeNext and Bundler
 * both resolve (tsc's own output, extensionless, NodeNext does not). Inside the workspace the
 * package is used from src/. tsdown stays on 0.21.x: 0.22 and newer need Node 22.
 */
export default defineConfig({
  entry: { index: "src/index.ts", d1: "src/d1.ts", sqlite: "src/sqlite.ts", drizzle: "src/drizzle.ts", types: "src/types.ts" },
  format: "esm",
  // The core and /d1 run on Cloudflare Workers: nothing assumes Node, and an import of a Node
  // module anywhere fails the build (unresolved on this platform, and every warning fails it).
  platform: "neutral",
  target: "es2022",
  sourcemap: true,
  tsconfig: false,
  dts: { compilerOptions: { strict: true, lib: ["ES2023", "DOM"], types: ["node"], skipLibCheck: true } },
  // The dependency and the peers stay imports; anything else from node_modules would be bundled
  // in silently, so it is an error instead.
  deps: { onlyBundle: [] },
  failOnWarn: true,
  checks: { pluginTimings: false },
});
