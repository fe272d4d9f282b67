import type { NextConfig } from "next";

const config: NextConfig = {
  // Native and heavy server packages stay in node_modules instead of the server bundle.
  serverExternalPackages: ["better-sqlite3", "@node-rs/argon2", "quickjs-emscripten", "smtp-server", "mailparser", "nodemailer", "@googleapis/sheets"],
  poweredByHeader: false,
  typedRoutes: false,
};

export default config;
