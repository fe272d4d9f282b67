/** The `whenthen` command's entry (`pnpm whenthen`, bin dist/cli.mjs); the program is cli/program.ts. */
import { main } from "./program";

async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) process.stderr.write("Type the value, then press Enter and Ctrl-D:\n");
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

process.exitCode = await main(process.argv.slice(2), {
  out: (s) => process.stdout.write(s.endsWith("\n") ? s : `${s}\n`),
  err: (s) => process.stderr.write(s.endsWith("\n") ? s : `${s}\n`),
  stdin: readStdin,
  env: process.env,
});
