import { createHash, randomBytes } from "node:crypto";
import type { App } from "../app";
import { isIsoDateTime } from "../core/dates";
import { UserError } from "../core/errors";
import { newId } from "../core/ids";
import type { ApiTokenRow } from "../db/store/types";

/** `wt_` and 43 base64url characters (256 bits). The prefix makes a leaked token easy to grep for. */
const TOKEN_PATTERN = /^wt_[A-Za-z0-9_-]{43}$/;
const NAME_MAX = 80;
/** last_used_at is written at most this often per token, so a busy script does not write on every call. */
const TOUCH_EVERY_MS = 60_000;

const hashOf = (token: string): string => createHash("sha256").update(token).digest("hex");

export interface TokenIdentity {
  tokenId: string;
  name: string;
  readOnly: boolean;
}

/** A real token past its expiry: refused with this, in words, and not counted as a guess. */
export interface ExpiredToken {
  expired: { name: string; at: string };
}

/** What a token may be given as `expires_at`: a date and time with its zone, in the future. */
function expiryProblem(value: unknown, now: Date): string | null {
  if (!isIsoDateTime(value)) {
    return `expires_at must be a date and time with its zone, such as 2027-01-31T00:00:00Z, or null for a token that never expires; got ${JSON.stringify(value)?.slice(0, 60)}`;
  }
  if (Date.parse(value) <= now.getTime()) return `expires_at ${value} is not in the future`;
  return null;
}

/**
 * API tokens: named, hashed at rest, shown once, revocable, with a last-used time, optionally
 * read-only and optionally expiring. The auth middleware asks `verify` for a request's bearer token.
 */
export function createApiTokens(app: Pick<App, "store" | "clock">) {
  const touched = new Map<string, number>();
  return {
    list: (): Promise<ApiTokenRow[]> => app.store.apiTokens.list(),

    /** Makes a token; the value is in the answer only, never stored. */
    async create(input: { name?: unknown; read_only?: unknown; expires_at?: unknown }): Promise<{ token: string; row: ApiTokenRow }> {
      const name = typeof input.name === "string" ? input.name.trim() : "";
      const problems: { path: string; message: string }[] = [];
      if (!name) problems.push({ path: "name", message: "give the token a name (what uses it: “backup script”, “CLI on my laptop”)" });
      else if (name.length > NAME_MAX) problems.push({ path: "name", message: `the name is longer than ${NAME_MAX} characters` });
      else if (await app.store.apiTokens.nameTaken(name)) problems.push({ path: "name", message: `a token named “${name}” exists; pick another name or revoke that one` });
      if (input.read_only !== undefined && typeof input.read_only !== "boolean") problems.push({ path: "read_only", message: "read_only is true or false" });
      const expiry = input.expires_at === undefined || input.expires_at === null ? null : expiryProblem(input.expires_at, app.clock.now());
      if (expiry) problems.push({ path: "expires_at", message: expiry });
      if (problems.length) throw new UserError(`token: ${problems.map((p) => p.message).join("; ")}`, problems);
      const token = `wt_${randomBytes(32).toString("base64url")}`;
      const now = app.clock.now().toISOString();
      const expiresAt = typeof input.expires_at === "string" ? new Date(input.expires_at).toISOString() : null;
      const row = { id: newId(), name, hash: hashOf(token), prefix: token.slice(0, 9), readOnly: input.read_only === true, expiresAt, now };
      await app.store.apiTokens.insert(row);
      return { token, row: { id: row.id, name, prefix: row.prefix, readOnly: row.readOnly, lastUsedAt: null, expiresAt, createdAt: now } };
    },

    revoke: (id: string): Promise<boolean> => {
      touched.delete(id);
      return app.store.apiTokens.delete(id);
    },

    /**
     * The identity of a bearer token; null for a malformed, unknown or revoked one; `expired` for
     * one past its expiry. Its last use is written at most once a minute per token and process.
     */
    async verify(token: string): Promise<TokenIdentity | ExpiredToken | null> {
      if (!TOKEN_PATTERN.test(token)) return null;
      const row = await app.store.apiTokens.byHash(hashOf(token));
      if (!row) return null;
      const now = app.clock.now().getTime();
      if (row.expiresAt !== null && Date.parse(row.expiresAt) <= now) return { expired: { name: row.name, at: row.expiresAt } };
      if (now - (touched.get(row.id) ?? 0) >= TOUCH_EVERY_MS) {
        touched.set(row.id, now);
        await app.store.apiTokens.touch(row.id, new Date(now).toISOString());
      }
      return { tokenId: row.id, name: row.name, readOnly: row.readOnly };
    },
  };
}

export type ApiTokens = ReturnType<typeof createApiTokens>;

/** The token of an `Authorization: Bearer …` header; null when the request has none. */
export function bearerToken(req: Request): string | null {
  const auth = req.headers.get("authorization");
  if (!auth) return null;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(auth);
  return m ? m[1]! : "";
}
