/**
 * The web process's hot path for the benchmark: the same lean ingress server.ts mounts in front of
 * Next (requests to /api/hooks never reach Next), on its own node:http server.
 */
import { createServer } from "node:http";
import { createApp } from "@/lib/app";
import { createIngress } from "@/lib/http/ingress";

const app = createApp({ role: "web" });
const ingress = createIngress(app);
const server = createServer((req, res) => {
  if (!ingress(req, res)) {
    res.writeHead(404);
    res.end();
  }
});
server.keepAliveTimeout = 65_000;
server.listen(Number(process.env.PORT), "127.0.0.1", () => process.send?.("ready"));
process.on("SIGTERM", () => server.close(() => process.exit(0)));
