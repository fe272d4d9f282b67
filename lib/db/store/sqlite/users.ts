import type { users } from "./schema";
import type { NewUser, User } from "../types";
import { toUser } from "../user-row";
import type { Sqlite } from "./client";
import type { RawRow } from "./rows";

type UserRowRaw = RawRow<typeof users>;

/** The one admin (the schema allows more; the app creates one). */
export function createUsersRepo(sqlite: Sqlite) {
  const count = sqlite.prepare<[], { n: number }>("SELECT COUNT(*) AS n FROM users");
  const byEmail = sqlite.prepare<[string], UserRowRaw>("SELECT * FROM users WHERE email = ?");
  const byId = sqlite.prepare<[string], UserRowRaw>("SELECT * FROM users WHERE id = ?");
  const first = sqlite.prepare<[], UserRowRaw>("SELECT * FROM users ORDER BY created_at LIMIT 1");
  const insert = sqlite.prepare<[string, string, string, string, string]>(
    "INSERT INTO users (id, email, password_hash, session_version, created_at, updated_at) VALUES (?, ?, ?, 1, ?, ?)",
  );
  // UPDATE … RETURNING is read with `.all()`: `.get()` would return the row even when the commit
  // fails (lib/db/repos/runs.ts claim), and a session version that was never stored revokes nothing.
  const bump = sqlite.prepare<[string, string], { session_version: number }>(
    "UPDATE users SET session_version = session_version + 1, updated_at = ? WHERE id = ? RETURNING session_version",
  );
  const setPassword = sqlite.prepare<[string, string, string], { session_version: number }>(
    "UPDATE users SET password_hash = ?, session_version = session_version + 1, updated_at = ? WHERE id = ? RETURNING session_version",
  );
  const insertRow = (u: NewUser) => void insert.run(u.id, u.email, u.passwordHash, u.now, u.now);
  // BEGIN IMMEDIATE takes the write lock before the count, so two setups racing (in one process or
  // two) serialise here and the second sees the first one's row.
  const insertIfNoneTx = sqlite.transaction((u: NewUser): boolean => {
    if (count.get()!.n > 0) return false;
    insertRow(u);
    return true;
  });

  return {
    count: (): number => count.get()!.n,
    byEmail: (email: string): User | null => {
      const r = byEmail.get(email);
      return r ? toUser(r) : null;
    },
    byId: (id: string): User | null => {
      const r = byId.get(id);
      return r ? toUser(r) : null;
    },
    /** The first user created (the admin), or null. */
    first: (): User | null => {
      const r = first.get();
      return r ? toUser(r) : null;
    },
    insert: insertRow,
    /** Inserts only while the table is empty (first-run setup); false when a user already exists. */
    insertIfNone: (u: NewUser): boolean => insertIfNoneTx.immediate(u),
    /** Revokes every session issued so far; returns the new version (null: no such user). */
    bumpSessionVersion: (id: string, now: string): number | null => bump.all(now, id)[0]?.session_version ?? null,
    /** A new password also revokes every existing session; returns the new session version. */
    setPassword: (id: string, passwordHash: string, now: string): number | null => setPassword.all(passwordHash, now, id)[0]?.session_version ?? null,
  };
}
