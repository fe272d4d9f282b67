/**
 * The CLI's view of the API: one fetch wrapper that turns every answer into data or a CliError
 * with an exit code a script can branch on. Talks only HTTP; nothing here touches the database.
 */
export const EXIT = {
  ok: 0,
  /** The server refused the request: bad input, not found, a conflict, a failed run watched. */
  refused: 1,
  /** The command line itself is wrong (commander's usage errors). */
  usage: 2,
  /** No token, a bad or revoked one, or a read-only token asked to write. */
  auth: 3,
  /** The server could not be reached, or answered 5xx. */
  unreachable: 4,
} as const;

export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
    /** Every problem the server listed, with its path. */
    readonly problems: { path: string; message: string }[] = [],
  ) {
    super(message);
  }
}

export interface ClientOptions {
  url: string | undefined;
  token: string | undefined;
  fetch?: typeof fetch;
}

/** The server's address without a trailing slash; a CliError (usage) when it is missing or not http(s). */
export function serverBase(url: string | undefined): string {
  const base = (url ?? "").replace(/\/+$/, "");
  if (!base) throw new CliError("set WHENTHEN_URL to the app's address (e.g. http://localhost:3000), or pass --url", EXIT.usage);
  if (!/^https?:\/\//.test(base)) throw new CliError(`WHENTHEN_URL must start with http:// or https://, got "${base}"`, EXIT.usage);
  return base;
}

export function createClient(opts: ClientOptions) {
  const base = (opts.url ?? "").replace(/\/+$/, "");
  const doFetch = opts.fetch ?? fetch;

  async function request(method: string, path: string, body?: unknown, init: { stream?: boolean } = {}): Promise<Response> {
    serverBase(opts.url);
    if (!opts.token) throw new CliError("no API token (make one in Settings → API tokens; see whenthen --help for where the CLI reads it)", EXIT.auth);
    const headers: Record<string, string> = { authorization: `Bearer ${opts.token}`, accept: init.stream ? "text/event-stream" : "application/json" };
    if (body !== undefined) headers["content-type"] = "application/json";
    let res: Response;
    try {
      res = await doFetch(`${base}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    } catch (err) {
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      throw new CliError(`cannot reach ${base}: ${cause?.code ?? cause?.message ?? (err as Error).message}`, EXIT.unreachable);
    }
    if (res.ok) return res;
    const text = await res.text().catch(() => "");
    let parsed: { error?: string; problems?: { path: string; message: string }[] } = {};
    try {
      parsed = JSON.parse(text) as typeof parsed;
    } catch {
      // not JSON (a proxy's error page): the status says enough
    }
    const what = parsed.error ?? (text.slice(0, 200) || res.statusText);
    if (res.status === 401) throw new CliError(`the server refused the token: ${what}`, EXIT.auth);
    if (res.status === 403) throw new CliError(`not allowed: ${what}`, EXIT.auth);
    if (res.status >= 500) throw new CliError(`the server failed (${res.status}): ${what}`, EXIT.unreachable);
    throw new CliError(what, EXIT.refused, parsed.problems ?? []);
  }

  return {
    base,
    request,
    async json<T>(method: string, path: string, body?: unknown): Promise<T> {
      return (await (await request(method, path, body)).json()) as T;
    },
  };
}

export type Client = ReturnType<typeof createClient>;
