/** The local URL the benchmark's http actions post to: answers 200 at once and counts requests. */
import { createServer } from "node:http";

let count = 0;
const server = createServer((req, res) => {
  req.resume();
  req.on("end", () => {
    count++;
    res.writeHead(200, { "content-type": "application/json", "content-length": 11 });
    res.end('{"ok":true}');
  });
});
server.keepAliveTimeout = 65_000;
server.listen(Number(process.env.PORT), "127.0.0.1", () => process.send?.("ready"));
process.on("message", () => process.send?.({ count }));
process.on("SIGTERM", () => server.close(() => process.exit(0)));
