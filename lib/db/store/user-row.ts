import type { User } from "./types";

/** A `users` row as both engines hand it back. */
export interface UserRaw {
  id: string;
  email: string;
  password_hash: string;
  session_version: number;
  created_at: string;
  updated_at: string;
}

export const toUser = (r: UserRaw): User => ({
  id: r.id,
  email: r.email,
  passwordHash: r.password_hash,
  sessionVersion: r.session_version,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});
