/** The `whenthen` command's entry (`pnpm whenthen`, bin dist/cli.mjs); the program is cli/program.ts. */
import { main } from "./program";

async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) process.stderr.write("Type the value, then press Enter and Ctrl-D:\n");
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

/**
 * Reads one line from the terminal without echoing it (raw mode, so nothing the person types is
 * shown or kept by the terminal): Enter ends it, Backspace deletes, Ctrl-C cancels.
 */
function promptHidden(question: string): Promise<string> {
  const stdin = process.stdin;
  return new Promise((resolve, reject) => {
    let value = "";
    const finish = (err?: Error) => {
      stdin.off("data", onData);
      stdin.setRawMode(false);
      stdin.pause();
      process.stderr.write("\n");
      if (err) reject(err);
      else resolve(value);
    };
    const onData = (chunk: Buffer) => {
      for (const ch of chunk.toString("utf8")) {
        if (ch === "\r" || ch === "\n" || ch === "\u0004") return finish();
        if (ch === "\u0003") return finish(new Error("cancelled"));
        if (ch === "\u007f" || ch === "\b") value = value.slice(0, -1);
        else if (ch >= " ") value += ch;
      }
    };
    process.stderr.write(question);
    stdin.setRawMode(true);
    stdin.resume();
    stdin.on("data", onData);
  });
}

process.exitCode = await main(process.argv.slice(2), {
  out: (s) => process.stdout.write(s.endsWith("\n") ? s : `${s}\n`),
  err: (s) => process.stderr.write(s.endsWith("\n") ? s : `${s}\n`),
  stdin: readStdin,
  env: process.env,
  promptSecret: process.stdin.isTTY && process.stderr.isTTY ? promptHidden : undefined,
  uid: process.getuid?.(),
});
