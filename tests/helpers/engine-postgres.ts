import type { TestEngine } from "./engines";

/**
 * The PostgreSQL test engine. The PostgreSQL store lives on its own branch (issue 16, w16b) and
 * replaces this with one that opens a schema per test app on TEST_POSTGRES_URL and registers its
 * SQL (registerTestSql). Until then every PostgreSQL run is skipped, and says why.
 */
export function postgresEngine(): TestEngine {
  const url = process.env.TEST_POSTGRES_URL;
  return {
    name: "postgres",
    skip: url ? "this build has no PostgreSQL store yet" : "TEST_POSTGRES_URL is not set",
    open: () => {
      throw new Error("tests: the PostgreSQL engine is not available in this build");
    },
    peer: () => {
      throw new Error("tests: the PostgreSQL engine is not available in this build");
    },
  };
}
