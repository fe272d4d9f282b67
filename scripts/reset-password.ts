/**
 * `pnpm reset-password [--email you@example.com]`: sets a new admin password on the server and
 * signs out every browser. Asks for the password twice on a terminal (nothing is echoed); reads
 * the first line of standard input when it is piped (`echo '…' | pnpm reset-password`). Uses the
 * same DATA_DIR / DATABASE_URL as the app, so run it where the app runs (in Docker:
 * `docker compose exec app node dist/reset-password.mjs`).
 */
import { createInterface } from "node:readline";
import { Writable } from "node:stream";
import { createApp } from "@/lib/app";
import { resetPassword } from "@/lib/auth/reset";
import { UserError } from "@/lib/core/errors";
import { silentLogger } from "@/lib/core/log";

function argValue(name: string): string | undefined {
  const args = process.argv.slice(2);
  const i = args.indexOf(name);
  if (i >= 0) return args[i + 1];
  return args.find((a) => a.startsWith(`${name}=`))?.slice(name.length + 1);
}

/** One line from a terminal without echoing it, or the next line of piped input. */
async function readSecret(prompt: string, lines: AsyncIterator<string>, tty: boolean): Promise<string> {
  if (tty) process.stderr.write(prompt);
  const next = await lines.next();
  if (tty) process.stderr.write("\n");
  if (next.done) throw new UserError("reset-password: no password given (standard input ended)");
  return next.value;
}

async function main(): Promise<void> {
  const tty = Boolean(process.stdin.isTTY);
  // On a terminal the typed characters go to a sink instead of the screen.
  const muted = new Writable({ write: (_chunk, _enc, done) => done() });
  const rl = createInterface({ input: process.stdin, output: tty ? muted : undefined, terminal: tty });
  const lines = rl[Symbol.asyncIterator]();
  try {
    const password = await readSecret("New password: ", lines, tty);
    if (tty && (await readSecret("Again: ", lines, tty)) !== password) throw new UserError("reset-password: the two passwords differ; nothing was changed");
    const app = createApp({ log: silentLogger });
    try {
      const done = await resetPassword(app, { email: argValue("--email"), password });
      console.log(`reset-password: new password set for ${done.email}; every session is signed out (sign in again with the new password)`);
    } finally {
      void app.close();
    }
  } finally {
    rl.close();
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof UserError ? err.message : err);
  process.exit(1);
});
