/** An applet, its versions, and the applets aggregate. */
import type { applets } from "../sqlite/schema";
import type { AppletAlertChannel } from "./alerts";

type AppletColumns = typeof applets.$inferSelect;

/** An applet: the whole definition as one JSON document (validated by lib/definition on the way in). */
export type Applet = Omit<AppletColumns, "enabled" | "definition" | "tags" | "alertOpen" | "triggerAlertOpen" | "alertChannel" | "autoPause" | "listenUntil"> & {
  enabled: boolean;
  definition: Record<string, unknown>;
  /** Short labels, as lib/applets/tags normalised them; [] when none. */
  tags: string[];
  /** Its current version (the highest in applet_versions, read with the row); 0 only for a row no store method wrote. */
  version: number;
  /** A failure alert went out and no run succeeded since (a recovery notice is due). */
  alertOpen: boolean;
  triggerAlertOpen: boolean;
  /** null: the Settings channel; `{ mode: "none" }`: no alerts; or a channel of its own. */
  alertChannel: AppletAlertChannel;
  /** null: the Settings default. */
  autoPause: boolean | null;
};

/** Who saved a version: a signed-in user, an API token, or whenthen itself (a script, the migration). The label is kept as it was then. */
export interface VersionAuthor {
  kind: "user" | "token" | "system";
  id: string | null;
  /** The user's email or the token's name at the time of the save. */
  label: string;
}

/** How a version came to be. `backfill`: the first version the migration made of an applet saved before version history. */
export type VersionSource = "create" | "save" | "restore" | "import" | "duplicate" | "backfill";

/** One saved version of an applet: what was saved, who saved it, when, and how. */
export interface AppletVersion {
  appletId: string;
  version: number;
  name: string;
  enabled: boolean;
  definition: Record<string, unknown>;
  source: VersionSource;
  /** With source `restore`: the version it restored. */
  restoredFrom: number | null;
  author: VersionAuthor;
  createdAt: string;
}

/** The author of a save nobody made through the API (seed script, benches, tests of the store). */
export const SYSTEM_AUTHOR: VersionAuthor = { kind: "system", id: null, label: "whenthen" };

/**
 * What `applets.insert` / `applets.update` write. `now` is updated_at (and created_at unless given).
 * Each also stores the next version (name, enabled, definition as written) with `author`
 * (default SYSTEM_AUTHOR) and `source` (default `create` / `save`), in the same transaction.
 */
export interface AppletInsert {
  id: string;
  name: string;
  enabled: boolean;
  triggerType: string;
  definition: unknown;
  webhookToken: string;
  now: string;
  createdAt?: string;
  /** Insert: [] when absent. Update: absent keeps the stored tags. */
  tags?: string[];
  author?: VersionAuthor;
  source?: VersionSource;
  restoredFrom?: number | null;
}

/** The four columns the webhook hot path reads. `definition` is the stored JSON text (parsed lazily by the ingress). */
export interface HookApplet {
  id: string;
  enabled: boolean;
  webhookToken: string;
  definition: string;
  /** "Listen for test event": until this time (ISO) the next request is kept as a sample; null when not listening. */
  listenUntil: string | null;
}

/** Applets (table applets). Events, runs and trigger state belong to an applet (ON DELETE CASCADE). */
export interface AppletsStore {
  /** The applet, or null. */
  get(id: string): Promise<Applet | null>;
  /** Every applet, ordered by created_at, then id. */
  list(): Promise<Applet[]>;
  /**
   * Enabled applets of one trigger type (the mail receiver: `email`), any order; with
   * `includeDisabled`, the disabled ones too (the receiver records a message to one in the fire ledger).
   */
  listByTriggerType(type: string, opts?: { includeDisabled?: boolean }): Promise<Applet[]>;
  /**
   * Inserts with run_count 0 and no last_fired_at, and its version 1, in one transaction. Throws
   * on a duplicate id or webhook token (unique).
   */
  insert(a: AppletInsert): Promise<void>;
  /**
   * Replaces name, enabled, trigger type, definition and webhook token (created_at, counters kept)
   * and stores them as the next version, in one transaction; false (and no version): no such applet.
   */
  update(a: AppletInsert): Promise<boolean>;
  /** Every version of the applet, newest first; [] for an unknown id. */
  versions(id: string): Promise<AppletVersion[]>;
  /** One version, or null. */
  version(id: string, version: number): Promise<AppletVersion | null>;
  /**
   * Replaces the stored definition of one version ("purge this version's credentials"); not a
   * save: no new version, its author and time kept. On SQLite the old text's bytes are zeroed
   * (secure_delete) where the row was. false: no such version.
   */
  rewriteVersion(id: string, version: number, definition: unknown, now: string): Promise<boolean>;
  /** false: no such applet. Not a save: no version is stored (a version records the enabled state its save wrote). Enabling clears an auto-pause (paused_reason, paused_at) and the failure streak. */
  setEnabled(id: string, enabled: boolean, now: string): Promise<boolean>;
  /** The applet holding this webhook token (tokens are unique), or null. */
  byWebhookToken(token: string): Promise<{ id: string; name: string } | null>;
  /** Sets the token (does not touch updated_at); false: no such applet. Throws when another applet holds it. */
  setWebhookToken(id: string, token: string): Promise<boolean>;
  /** Deletes the applet with its events, runs and trigger state (cascade); false: no such applet. */
  delete(id: string): Promise<boolean>;
  /**
   * The webhook hot path: the four columns of the applet with this id, whatever its trigger type
   * (the ingress asks the trigger registry whether requests feed it; any other answers 404 like an
   * unknown hook); null when there is none. One primary-key read.
   */
  forHook(id: string): Promise<HookApplet | null>;
  /**
   * "Listen for test event": keep the next request as a sample until `until` (ISO), or stop
   * (null). Not a save: no version, updated_at kept. false: no such applet.
   */
  setListening(id: string, until: string | null): Promise<boolean>;
  /** Ends the listening if it is on at `now`: true for exactly one caller, the request that is the sample. */
  takeListening(id: string, now: string): Promise<boolean>;
  /** Ids of the applet's events (their attachment folders are deleted with it). */
  eventIds(id: string): Promise<string[]>;
}
