import type { NextConfig } from "next";

const config: NextConfig = {
  // Native and heavy server packages stay in node_modules instead of the server bundle.
  serverExternalPackages: ["better-sqlite3", "@node-rs/argon2", "quickjs-emscripten", "smtp-server", "mailparser", "nodemailer", "@googleapis/sheets"],
  poweredByHeader: false,
  // Bottom-left is where the nav's "Sign out" sits.
  devIndicators: { position: "bottom-right" },
  // The e2e tests build into their own folder: Next allows one dev server per build folder, and a
  // developer's `pnpm dev` must not block (or be blocked by) a test run.
  distDir: process.env.NEXT_DIST_DIR || ".next",
  typedRoutes: false,
};

export default config;
