import { defineConfig } from "vitest/config";

export default defineConfig({
  resolve: { tsconfigPaths: true },
  test: {
    include: ["tests/**/*.test.ts", "packages/*/test/**/*.test.ts"],
    environment: "node",
    testTimeout: 20_000,
    hookTimeout: 60_000,
    // Each file gets its own temp SQLite database; files run in parallel on the machine's cores.
    pool: "forks",
    // .ci/run asks for a JSON report too, to print a plain "N passed, N failed" line.
    reporters: process.env.VITEST_JSON_REPORT ? ["default", "json"] : ["default"],
    outputFile: process.env.VITEST_JSON_REPORT ? { json: process.env.VITEST_JSON_REPORT } : undefined,
  },
});
