// Plain JavaScript, not next.config.ts: Next transpiles a TypeScript config with its SWC binding
// every time the server starts, which cost the production web process ~27 MB of RSS (measured
// 130 → 103 MB idle, bench/RESULTS.md).
/** @type {import("next").NextConfig} */
const config = {
  // Native and heavy server packages stay in node_modules instead of the server bundle.
  serverExternalPackages: ["better-sqlite3", "@node-rs/argon2", "quickjs-emscripten", "smtp-server", "mailparser", "nodemailer", "@googleapis/sheets", "prom-client", "imapflow", "mqtt"],
  poweredByHeader: false,
  // Bottom-left is where the nav's "Sign out" sits.
  devIndicators: { position: "bottom-right" },
  // The e2e tests build into their own folder: Next allows one dev server per build folder, and a
  // developer's `pnpm dev` must not block (or be blocked by) a test run.
  distDir: process.env.NEXT_DIST_DIR || ".next",
  // `next dev` refuses its own scripts and HMR to any host but localhost, so a page opened at
  // http://127.0.0.1:3000 rendered but never hydrated (no click handler, forms fell back to plain
  // posts). Host names, not origins: the port does not matter. To open the dev server from a phone
  // or another machine on the LAN, add its address, comma separated:
  //   NEXT_ALLOWED_DEV_ORIGINS=192.168.1.20,whenthen.lan pnpm dev
  // Only the dev server reads this; a production build does not check origins this way.
  allowedDevOrigins: ["127.0.0.1", "localhost", ...(process.env.NEXT_ALLOWED_DEV_ORIGINS ?? "").split(",").map((h) => h.trim()).filter(Boolean)],
  typedRoutes: false,
};

export default config;
