import { defineConfig } from "drizzle-kit";

/** PostgreSQL migrations (`pnpm db:generate:pg`); the SQLite ones come from drizzle.config.ts. */
export default defineConfig({
  dialect: "postgresql",
  schema: "./lib/db/store/postgres/schema.ts",
  out: "./drizzle-pg",
});
