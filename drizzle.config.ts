import { defineConfig } from "drizzle-kit";

export default defineConfig({
  dialect: "sqlite",
  schema: "./lib/db/store/sqlite/schema.ts",
  out: "./drizzle",
});
