import { fileURLToPath } from "node:url";
import { launch } from "@/lib/launcher";

/**
 * `pnpm start` and `pnpm dev`: the web process, which also starts the worker beside it and stands
 * for both (lib/launcher). `node dist/start.mjs` in production (the worker is `node
 * dist/worker.mjs`), `node --import tsx start.ts` in development (the worker under tsx too).
 * Docker and systemd run the two processes directly instead.
 */
const dev = import.meta.url.endsWith(".ts");
launch({
  name: "web",
  child: {
    name: "worker",
    file: fileURLToPath(new URL(dev ? "./worker/index.ts" : "./worker.mjs", import.meta.url)),
    execArgv: dev ? ["--import", "tsx"] : [],
  },
});
await import("./server");
