/**
 * The baseline the webhook ingest is compared against, measured in the same run: plain node:http
 * and one prepared SQLite insert per request, on the same pragmas the app uses (WAL, NORMAL).
 */
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import path from "node:path";
import Database from "better-sqlite3";

const db = new Database(path.join(process.env.DATA_DIR!, "baseline.db"));
db.pragma("journal_mode = WAL");
db.pragma("synchronous = NORMAL");
db.pragma("busy_timeout = 5000");
db.exec("CREATE TABLE IF NOT EXISTS hits (id TEXT PRIMARY KEY, body TEXT NOT NULL, received_at TEXT NOT NULL)");
const insert = db.prepare("INSERT INTO hits (id, body, received_at) VALUES (?, ?, ?)");

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (c: Buffer) => chunks.push(c));
  req.on("end", () => {
    const id = randomUUID();
    insert.run(id, Buffer.concat(chunks).toString(), new Date().toISOString());
    const body = JSON.stringify({ run_id: id });
    res.writeHead(202, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
    res.end(body);
  });
});
server.keepAliveTimeout = 65_000;
server.listen(Number(process.env.PORT), "127.0.0.1", () => process.send?.("ready"));
process.on("SIGTERM", () => server.close(() => process.exit(0)));
