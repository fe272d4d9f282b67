/**
 * `pnpm whenthen …` (bin `whenthen`): drive a whenthen server from a script, over its API with an
 * API token. WHENTHEN_URL (or --url) says where; the token comes from the environment, a file only
 * its owner can read, or a prompt, never an argument (cli/token.ts); --json gives
 * the server's JSON; exit codes: 0 ok, 1 refused (bad input, not found, a watched run failed),
 * 2 usage, 3 token refused, 4 server unreachable or failing.
 */
import { Command, CommanderError, Option } from "commander";
import { CliError, EXIT, createClient, serverBase, type Client } from "./client";
import { appletCommands, runCommands, secretCommands, type CommandContext, type Io } from "./commands";
import { resolveToken, TOKEN_ARGUMENT_REFUSED } from "./token";

/** Runs the CLI; resolves to the exit code (the caller exits). */
export async function main(argv: string[], io: Io): Promise<number> {
  let client: Client | null = null;
  const program = new Command("whenthen")
    .description("Drive a whenthen server over its API (make a token in Settings → API tokens).")
    .addOption(new Option("--url <url>", "the server's address").env("WHENTHEN_URL"))
    .option("--token-file <path>", "read the API token from this file (chmod 600); or set WHENTHEN_TOKEN or WHENTHEN_TOKEN_FILE, or be asked in a terminal")
    // Recognised only to be refused with the reason (cli/token.ts): by now the token is exposed.
    .addOption(new Option("--token <token>").hideHelp())
    .option("--json", "print the server's JSON instead of text")
    .showHelpAfterError()
    .exitOverride()
    .configureOutput({ writeOut: io.out, writeErr: io.err })
    // The token before any command runs: a prompt must not compete with a command reading stdin.
    .hook("preAction", async () => {
      const o = program.opts<{ url?: string; token?: string; tokenFile?: string }>();
      if (o.token !== undefined) throw new CliError(TOKEN_ARGUMENT_REFUSED, EXIT.usage);
      // commander reads .env() options from process.env; the io's env wins so tests and callers control it.
      const url = o.url ?? io.env.WHENTHEN_URL;
      const token = await resolveToken({ file: o.tokenFile, env: io.env, prompt: io.promptSecret, url: serverBase(url), uid: io.uid });
      client = createClient({ url, token, fetch: io.fetch });
    });
  const api = (): Client => {
    if (!client) throw new Error("cli: a command ran before its token was resolved");
    return client;
  };
  const json = () => program.opts<{ json?: boolean }>().json === true;
  const print = (data: unknown, text: () => string) => io.out(json() ? JSON.stringify(data, null, 2) : text());

  const ctx: CommandContext = { io, api, json, print };
  appletCommands(program, ctx);
  runCommands(program, ctx);
  secretCommands(program, ctx);

  try {
    await program.parseAsync(argv, { from: "user" });
    return EXIT.ok;
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version end here too, with exit code 0.
      return err.exitCode === 0 ? EXIT.ok : EXIT.usage;
    }
    if (err instanceof CliError) {
      if (json()) io.err(JSON.stringify({ error: err.message, problems: err.problems }));
      else {
        io.err(`whenthen: ${err.message}`);
        for (const p of err.problems) io.err(`  ${p.path}: ${p.message}`);
      }
      return err.exitCode;
    }
    io.err(`whenthen: ${(err as Error).stack ?? String(err)}`);
    return EXIT.refused;
  }
}
