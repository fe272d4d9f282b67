/** The users aggregate (the one admin). */
import type { users } from "../sqlite/schema";

type UserColumns = typeof users.$inferSelect;

export type User = UserColumns;

export interface NewUser {
  id: string;
  /** Stored as given; lib/auth normalises (trim, lower case) before it gets here. */
  email: string;
  passwordHash: string;
  now: string;
}

/** Users and their session version (sessions themselves are signed cookies, lib/auth/session). */
export interface UsersStore {
  count(): Promise<number>;
  /** Exact match on the stored (normalised) email. */
  byEmail(email: string): Promise<User | null>;
  byId(id: string): Promise<User | null>;
  /** The first user created (the admin), or null. */
  first(): Promise<User | null>;
  /** Inserts with session_version 1. Throws on a duplicate email. */
  insert(u: NewUser): Promise<void>;
  /**
   * First-run setup: inserts only while the table is empty, serialised so that two setups racing
   * (in one process or several) create one user; false when a user already exists.
   */
  insertIfNone(u: NewUser): Promise<boolean>;
  /** session_version + 1 (revokes every session so far); the new version, or null for no such user. Committed before it returns. */
  bumpSessionVersion(id: string, now: string): Promise<number | null>;
  /** A new password hash, and session_version + 1; the new version, or null. */
  setPassword(id: string, passwordHash: string, now: string): Promise<number | null>;
}
