/**
 * Where the CLI takes its API token from, never the command line: an argument shows in `ps` to
 * every user of the machine and stays in shell history. In order: `--token-file <path>`,
 * WHENTHEN_TOKEN, WHENTHEN_TOKEN_FILE, the default file (~/.config/whenthen/token, or under
 * XDG_CONFIG_HOME), then a prompt when a person is at a terminal. A token file must be readable by
 * its owner only (0600 or 0400), as ssh asks of a private key.
 */
import { readFileSync, statSync, type Stats } from "node:fs";
import path from "node:path";
import { CliError, EXIT } from "./client";

export interface TokenSources {
  /** `--token-file`, when given. */
  file?: string;
  env: Record<string, string | undefined>;
  /** Asks the person at the terminal, without echo; absent when stdin is not a terminal. */
  prompt?: (question: string) => Promise<string>;
  /** The server the token is for, named in the prompt. */
  url: string;
  /** The current user's uid (process.getuid); undefined where there is none (Windows): ownership is not checked. */
  uid?: number;
}

/** What `--token` is answered with: the CLI refuses it rather than use a token already exposed. */
export const TOKEN_ARGUMENT_REFUSED =
  "--token is not accepted: a token on the command line is visible to every user of this machine (ps) and stays in your shell history. " +
  "Put it in WHENTHEN_TOKEN, or in a file only you can read (chmod 600) named by --token-file or WHENTHEN_TOKEN_FILE, or run the command in a terminal to be asked for it. " +
  "If you already typed it on a command line, revoke it in Settings → API tokens and make a new one.";

export function defaultTokenFile(env: Record<string, string | undefined>): string | null {
  const base = env.XDG_CONFIG_HOME || (env.HOME ? path.join(env.HOME, ".config") : null);
  return base ? path.join(base, "whenthen", "token") : null;
}

export async function resolveToken(s: TokenSources): Promise<string> {
  if (s.file !== undefined) return readTokenFile(s.file, s.uid, "--token-file");
  if (s.env.WHENTHEN_TOKEN) return s.env.WHENTHEN_TOKEN.trim();
  if (s.env.WHENTHEN_TOKEN_FILE) return readTokenFile(s.env.WHENTHEN_TOKEN_FILE, s.uid, "WHENTHEN_TOKEN_FILE");
  const fallback = defaultTokenFile(s.env);
  if (fallback && statOrNull(fallback)) return readTokenFile(fallback, s.uid, "the default token file");
  if (s.prompt) {
    const typed = (await s.prompt(`API token for ${s.url} (Settings → API tokens; not shown as you type): `)).trim();
    if (typed) return typed;
    throw new CliError("no token was typed", EXIT.auth);
  }
  throw new CliError(
    `no API token: set WHENTHEN_TOKEN, name a file only you can read with --token-file or WHENTHEN_TOKEN_FILE${fallback ? `, put it in ${fallback}` : ""}, or run the command in a terminal to be asked for it (make a token in Settings → API tokens)`,
    EXIT.auth,
  );
}

function statOrNull(file: string): Stats | null {
  try {
    return statSync(file);
  } catch {
    return null;
  }
}

/** The token in `file`, after checking that only its owner, this user, can read it. */
function readTokenFile(file: string, uid: number | undefined, named: string): string {
  const st = statOrNull(file);
  if (!st) throw new CliError(`cannot read the token from ${file} (${named}): no such file`, EXIT.auth);
  if (!st.isFile()) throw new CliError(`cannot read the token from ${file} (${named}): it is not a file`, EXIT.auth);
  if (uid !== undefined) {
    const mode = (st.mode & 0o777).toString(8).padStart(4, "0");
    if (st.mode & 0o077) {
      throw new CliError(`refusing to read the token from ${file}: its permissions are ${mode}, so other users of this machine can read it too; run chmod 600 ${file}`, EXIT.auth);
    }
    if (st.uid !== uid) throw new CliError(`refusing to read the token from ${file}: it belongs to another user (uid ${st.uid}), who can change it`, EXIT.auth);
  }
  const token = readFileSync(file, "utf8").trim();
  if (!token) throw new CliError(`the token file ${file} is empty`, EXIT.auth);
  if (/\s/.test(token)) throw new CliError(`the token file ${file} holds more than one word; it should hold the token only (wt_…)`, EXIT.auth);
  return token;
}
