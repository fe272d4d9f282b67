/**
 * `pnpm db:copy --from file:./data/app.db --to postgres://user:pass@host:5432/whenthen`
 *
 * Moves a SQLite install to PostgreSQL: migrates the target, records the install's keys there
 * (SECRETS_KEY and SESSION_SECRET from the environment or from the files beside the database,
 * DATA_DIR), then copies every applet, trigger state, event, run, secret (still encrypted with the
 * same SECRETS_KEY), user, job lock and worker row in one transaction. Stop the old install's
 * worker first so no run changes after the copy; the copy itself is one consistent snapshot.
 */
import path from "node:path";
import { parseArgs } from "node:util";
import { loadConfig } from "../lib/core/config";
import { copySqliteToPostgres } from "../lib/db/store/copy";
import { alertPolicy } from "../lib/alerts/policy";
import { openPostgresStore } from "../lib/db/store/postgres";

const usage = "usage: pnpm db:copy --from file:./data/app.db --to postgres://user:password@host:5432/database";

async function main(): Promise<number> {
  const { values } = parseArgs({ options: { from: { type: "string" }, to: { type: "string" } } });
  if (!values.from || !values.to) {
    console.error(usage);
    return 2;
  }
  const from = path.resolve(values.from.startsWith("file:") ? values.from.slice("file:".length) : values.from);
  if (!/^postgres(ql)?:\/\//i.test(values.to)) {
    console.error(`db:copy: --to must be a postgres:// URL, got "${values.to.split(":")[0]}:"\n${usage}`);
    return 2;
  }
  // The keys of the install being moved: its DATA_DIR is where its database lives unless set.
  const config = loadConfig({ ...process.env, DATA_DIR: process.env.DATA_DIR || path.dirname(from), DATABASE_URL: values.to });
  const store = openPostgresStore({ url: values.to, poolSize: 2, keys: { secretsKey: config.secretsKey, sessionSecret: config.sessionSecret }, alertPolicy });
  try {
    await store.ready();
    const counts = await copySqliteToPostgres({ from, pool: store.pool, log: (l) => console.log(l) });
    console.log(`db:copy: done: ${Object.entries(counts).map(([t, n]) => `${n} ${t}`).join(", ")}`);
    console.log("db:copy: now start every process with DATABASE_URL set to the target, and the same SECRETS_KEY and SESSION_SECRET");
    return 0;
  } finally {
    await store.close();
  }
}

main().then(
  (code) => process.exit(code),
  (err: Error) => {
    console.error(err.message);
    process.exit(1);
  },
);
