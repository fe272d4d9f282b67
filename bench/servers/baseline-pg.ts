/**
 * The baseline the PostgreSQL webhook ingest is compared against, measured in the same run: plain
 * node:http and one prepared PostgreSQL insert per request (a named statement, so the server
 * parses and plans it once per connection), on a pg pool of the app's default size
 * (DATABASE_POOL_SIZE 10). BENCH_PG_URL names the database, BENCH_PG_SCHEMA the schema.
 */
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import pg from "pg";

const schema = process.env.BENCH_PG_SCHEMA!;
const pool = new pg.Pool({ connectionString: process.env.BENCH_PG_URL, max: Number(process.env.DATABASE_POOL_SIZE ?? 10), options: `-c search_path=${schema}` });
await pool.query("CREATE TABLE IF NOT EXISTS hits (id text PRIMARY KEY, body text NOT NULL, received_at timestamptz NOT NULL)");

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (c: Buffer) => chunks.push(c));
  req.on("end", () => {
    const id = randomUUID();
    pool.query({ name: "hit", text: "INSERT INTO hits (id, body, received_at) VALUES ($1, $2, $3)", values: [id, Buffer.concat(chunks).toString(), new Date().toISOString()] }).then(
      () => {
        const body = JSON.stringify({ run_id: id });
        res.writeHead(202, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
        res.end(body);
      },
      (err: unknown) => {
        console.error(err);
        res.writeHead(500);
        res.end();
      },
    );
  });
});
server.keepAliveTimeout = 65_000;
server.listen(Number(process.env.PORT), "127.0.0.1", () => process.send?.("ready"));
process.on("SIGTERM", () => server.close(() => void pool.end().then(() => process.exit(0))));
