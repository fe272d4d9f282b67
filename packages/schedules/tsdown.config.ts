import { defineConfig } from "tsdown";

/**
 * The published build (`pnpm build`; `pnpm pack` runs it as prepack): one ESM file and one bundled
 * declaration file per entry of publishConfig.exports, shared code in hashed chunks. The
 * declarations import each other as "../types-….js", which `moduleResolution` NodeNext and
 * Bundler both resolve (tsc's own output, extensionless, NodeNext does not). Inside the workspace
 * the package is used from src/. tsdown stays on 0.21.x: 0.22 and newer need Node 22.
 */
export default defineConfig({
  entry: {
    index: "src/index.ts",
    "stores/memory": "src/stores/memory.ts",
    "stores/sqlite": "src/stores/sqlite.ts",
    "stores/postgres": "src/stores/postgres.ts",
    "stores/mysql": "src/stores/mysql.ts",
    "stores/redis": "src/stores/redis.ts",
  },
  format: "esm",
  // The core (croner and the reconciler) assumes no runtime; the stores import node:crypto, which
  // stays an import.
  platform: "neutral",
  target: "es2022",
  sourcemap: true,
  tsconfig: false,
  dts: { compilerOptions: { strict: true, lib: ["ES2023", "DOM"], types: ["node"], skipLibCheck: true } },
  // The dependency and the drivers stay imports; anything else from node_modules would be bundled
  // in silently, so it is an error instead.
  deps: { neverBundle: [/^node:/], onlyBundle: [] },
  failOnWarn: true,
  checks: { pluginTimings: false },
});
