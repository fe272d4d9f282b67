import { toUser, type UserRaw } from "../user-row";
import type { UsersStore } from "../types";
import { query, type Begin, type Queryable } from "./pool";

/** The advisory lock first-run setup takes so two setups (any processes) create one user. */
const SETUP_LOCK_KEY = 7_216_016_002;

export function usersStore(q: Queryable, begin: Begin): UsersStore {
  const one = async (text: string, args: unknown[]) => {
    const r = (await query<UserRaw>(q, text, args)).rows[0];
    return r ? toUser(r) : null;
  };
  const insertOn = async (c: Queryable, u: { id: string; email: string; passwordHash: string; now: string }) => {
    await query(c, "INSERT INTO users (id, email, password_hash, session_version, created_at, updated_at) VALUES ($1, $2, $3, 1, $4, $4)", [u.id, u.email, u.passwordHash, u.now]);
  };
  return {
    count: async () => (await query<{ n: number }>(q, "SELECT COUNT(*)::int AS n FROM users")).rows[0]!.n,
    byEmail: (email) => one("SELECT * FROM users WHERE email = $1", [email]),
    byId: (id) => one("SELECT * FROM users WHERE id = $1", [id]),
    first: () => one("SELECT * FROM users ORDER BY created_at LIMIT 1", []),
    insert: (u) => insertOn(q, u),
    // READ COMMITTED lets two transactions both count zero; a transaction-scoped advisory lock
    // serialises them, and the second counts after the first committed.
    insertIfNone: (u) =>
      begin(async (c) => {
        await query(c, "SELECT pg_advisory_xact_lock($1)", [SETUP_LOCK_KEY]);
        if ((await query<{ n: number }>(c, "SELECT COUNT(*)::int AS n FROM users")).rows[0]!.n > 0) return false;
        await insertOn(c, u);
        return true;
      }),
    bumpSessionVersion: async (id, now) =>
      (await query<{ session_version: number }>(q, "UPDATE users SET session_version = session_version + 1, updated_at = $1 WHERE id = $2 RETURNING session_version", [now, id])).rows[0]
        ?.session_version ?? null,
    setPassword: async (id, passwordHash, now) =>
      (
        await query<{ session_version: number }>(
          q,
          "UPDATE users SET password_hash = $1, session_version = session_version + 1, updated_at = $2 WHERE id = $3 RETURNING session_version",
          [passwordHash, now, id],
        )
      ).rows[0]?.session_version ?? null,
  };
}
