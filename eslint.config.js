import js from "@eslint/js";
import reactHooks from "eslint-plugin-react-hooks";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["node_modules/", "**/node_modules/", ".next/", "dist/", "data/", "drizzle/", "packages/*/dist/", "next-env.d.ts", "tests/e2e/screenshots/"] },
  js.configs.recommended,
  // Type-aware: floating and misused promises, non-exhaustive switches, awaiting what is not a
  // promise, `any` leaking out of untyped values. Types come from tsconfig.json (the project
  // service finds each package's own tsconfig the same way the editor does).
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
      globals: { process: "readonly", console: "readonly", URL: "readonly", Buffer: "readonly", setTimeout: "readonly", clearTimeout: "readonly", setInterval: "readonly", clearInterval: "readonly", fetch: "readonly" },
    },
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_", caughtErrors: "none" }],
      "@typescript-eslint/no-explicit-any": "error",
      "no-constant-condition": ["error", { checkLoops: false }],
      // A switch over a union names every member (or has a default that says why not).
      "@typescript-eslint/switch-exhaustiveness-check": ["error", { considerDefaultExhaustiveForUnions: true }],
      // Off: an `async` function without `await` is how a Promise-returning contract (a plug-in's
      // run, a store method, a test's body) is implemented here; the bug this rule looks for, a
      // forgotten await, is what no-floating-promises and await-thenable catch.
      "@typescript-eslint/require-await": "off",
    },
  },
  // Tests read parsed JSON (responses, stored rows) as `any` and assert on its shape, which fails
  // the test when it is wrong; they hand store methods to `expect` and destructure them from
  // contract-suite factories, where no `this` is involved.
  {
    files: ["tests/**", "packages/*/test/**", "bench/**"],
    rules: {
      "@typescript-eslint/no-unsafe-assignment": "off",
      "@typescript-eslint/no-unsafe-member-access": "off",
      "@typescript-eslint/no-unsafe-argument": "off",
      "@typescript-eslint/no-unsafe-return": "off",
      "@typescript-eslint/no-unsafe-call": "off",
      "@typescript-eslint/unbound-method": "off",
      // A test server's or socket's async handler that throws fails the test through the
      // unhandled rejection vitest reports; wrapping each in `void (async () => …)()` adds nothing.
      "@typescript-eslint/no-misused-promises": ["error", { checksVoidReturn: { arguments: false } }],
    },
  },
  // Plain JavaScript outside the TypeScript project (config files, build and bench scripts) has
  // no types to check against. The sandbox worker is in the project (tsconfig includes it with
  // checkJs) and keeps the type-aware rules.
  {
    files: ["**/*.js", "**/*.mjs", "**/*.cjs"],
    ignores: ["lib/sandbox/worker.mjs"],
    ...tseslint.configs.disableTypeChecked,
  },
  // CommonJS config files (dependency-cruiser reads .dependency-cruiser.cjs with require).
  { files: ["**/*.cjs"], languageOptions: { sourceType: "commonjs", globals: { module: "writable", require: "readonly" } } },
  // Event handlers that start async work are passed as `() => void handler()`: each handler shows
  // its own failures (fetch(…).catch(() => null) and an error state), and React ignores what a
  // handler returns, so a promise there would only hide a rejection.
  // The rules of hooks, effect dependencies and the React Compiler's checks (purity, refs read
  // during render, setState in effects…) for everything that renders. A missing dependency is an
  // error, not a warning: hand-picked dependencies are how an effect ends up reading stale state.
  {
    files: ["components/**/*.{ts,tsx}", "app/**/*.{ts,tsx}"],
    ...reactHooks.configs.flat.recommended,
    rules: { ...reactHooks.configs.flat.recommended.rules, "react-hooks/exhaustive-deps": "error" },
  },
);
