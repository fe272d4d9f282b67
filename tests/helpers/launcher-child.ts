/**
 * The child of tests/helpers/launcher-web.ts: says it is up, stops on SIGTERM/SIGINT as the worker
 * does (exit 0), or ends by itself with CHILD_EXIT_CODE after CHILD_EXIT_AFTER_MS.
 */
const stop = (signal: string) => {
  process.stdout.write(`worker got ${signal}\n`);
  process.exit(0);
};
process.on("SIGTERM", () => stop("SIGTERM"));
process.on("SIGINT", () => stop("SIGINT"));
process.stdout.write("worker started\n");
process.stderr.write("worker warns\n");
// A line written in pieces, the way a child's output arrives: the launcher passes it on whole.
process.stdout.write("worker writes ");
setTimeout(() => process.stdout.write("slowly\n"), 20);
if (process.env.CHILD_EXIT_CODE) setTimeout(() => process.exit(Number(process.env.CHILD_EXIT_CODE)), Number(process.env.CHILD_EXIT_AFTER_MS ?? 300));
setInterval(() => {}, 60_000);
export {};
