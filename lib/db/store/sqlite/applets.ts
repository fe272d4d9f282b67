import { newId } from "../../../core/ids";
import type { applets, appletVersions } from "./schema";
import { SYSTEM_AUTHOR, type Applet, type AppletInsert, type AppletVersion, type HookApplet, type VersionSource } from "../types";
import type { Sqlite } from "./client";
import type { RawRow } from "./rows";
import { APPLET_COLUMNS, toApplet as toAppletRow, toHookApplet, toVersion as toVersionRow, type HookAppletRaw } from "../applet-row";

type AppletRowRaw = RawRow<typeof applets> & { version: number | null };
type VersionRowRaw = RawRow<typeof appletVersions>;

/** SQLite hands JSON columns back as their stored text. */
const toApplet = (r: AppletRowRaw) => toAppletRow(r, "text");
const toVersion = (r: VersionRowRaw) => toVersionRow(r, "text");

export function createAppletsRepo(sqlite: Sqlite) {
  const byId = sqlite.prepare<[string], AppletRowRaw>(`SELECT ${APPLET_COLUMNS} FROM applets WHERE id = ?`);
  const all = sqlite.prepare<[], AppletRowRaw>(`SELECT ${APPLET_COLUMNS} FROM applets ORDER BY created_at, id`);
  // The next number is read and written in one statement, inside the save's transaction (SQLite
  // serialises writers), so two saves never take the same number; the unique index says so too.
  const insertVersion = sqlite.prepare(
    `INSERT INTO applet_versions (id, applet_id, version, name, enabled, definition, source, restored_from, author_type, author_id, author_label, created_at, updated_at)
     SELECT @versionId, @id, COALESCE(MAX(version), 0) + 1, @name, @enabled, @definition, @source, @restoredFrom, @authorType, @authorId, @authorLabel, @now, @now
     FROM applet_versions WHERE applet_id = @id`,
  );
  const versionsOf = sqlite.prepare<[string], VersionRowRaw>("SELECT * FROM applet_versions WHERE applet_id = ? ORDER BY version DESC");
  const versionOf = sqlite.prepare<[string, number], VersionRowRaw>("SELECT * FROM applet_versions WHERE applet_id = ? AND version = ?");
  const rewriteVersion = sqlite.prepare("UPDATE applet_versions SET definition = ?, updated_at = ? WHERE applet_id = ? AND version = ?");
  const insert = sqlite.prepare(
    `INSERT INTO applets (id, name, enabled, trigger_type, definition, webhook_token, run_count, tags, created_at, updated_at)
     VALUES (@id, @name, @enabled, @triggerType, @definition, @webhookToken, 0, COALESCE(@tags, '[]'), @createdAt, @now)`,
  );
  // An applet enabled again (by a save or the toggle) is no longer paused, and its failure
  // streak starts over (or the next failure would pause it again at once).
  const UNPAUSE = `paused_reason = CASE WHEN @enabled = 1 THEN NULL ELSE paused_reason END,
       paused_at = CASE WHEN @enabled = 1 THEN NULL ELSE paused_at END,
       failure_streak = CASE WHEN @enabled = 1 AND enabled = 0 THEN 0 ELSE failure_streak END,
       disabled_at = CASE WHEN @enabled = 1 THEN NULL WHEN enabled = 1 THEN @now ELSE disabled_at END`;
  const update = sqlite.prepare(
    `UPDATE applets SET name = @name, enabled = @enabled, trigger_type = @triggerType, definition = @definition,
       webhook_token = @webhookToken, tags = COALESCE(@tags, tags), updated_at = @now, ${UNPAUSE} WHERE id = @id`,
  );
  const setEnabled = sqlite.prepare(`UPDATE applets SET ${UNPAUSE}, enabled = @enabled, updated_at = @now WHERE id = @id`);
  const setToken = sqlite.prepare("UPDATE applets SET webhook_token = ? WHERE id = ?");
  const byToken = sqlite.prepare<[string], { id: string; name: string }>("SELECT id, name FROM applets WHERE webhook_token = ?");
  const remove = sqlite.prepare("DELETE FROM applets WHERE id = ?");
  // The webhook hot path reads four columns of one row by primary key. Every applet has a token,
  // but only an applet whose trigger is fed by requests answers on it: the ingress asks the trigger
  // registry (any other type answers 404, like an unknown hook).
  const forHook = sqlite.prepare<[string], HookAppletRaw>(
    "SELECT id, enabled, webhook_token, definition, listen_until FROM applets WHERE id = ?",
  );
  const setListening = sqlite.prepare("UPDATE applets SET listen_until = ? WHERE id = ?");
  // ISO times compare as text (one format, toISOString's).
  const takeListening = sqlite.prepare("UPDATE applets SET listen_until = NULL WHERE id = ? AND listen_until > ?");

  const params = (a: AppletInsert, source: VersionSource) => ({
    id: a.id,
    name: a.name,
    enabled: a.enabled ? 1 : 0,
    triggerType: a.triggerType,
    definition: JSON.stringify(a.definition),
    webhookToken: a.webhookToken,
    now: a.now,
    createdAt: a.createdAt ?? a.now,
    tags: a.tags === undefined ? null : JSON.stringify(a.tags),
    versionId: newId(),
    source: a.source ?? source,
    restoredFrom: a.restoredFrom ?? null,
    authorType: (a.author ?? SYSTEM_AUTHOR).kind,
    authorId: (a.author ?? SYSTEM_AUTHOR).id,
    authorLabel: (a.author ?? SYSTEM_AUTHOR).label,
  });
  // The row and its version commit together (inside a Store#transaction, a savepoint of it).
  const insertTx = sqlite.transaction((a: AppletInsert) => {
    const p = params(a, "create");
    insert.run(p);
    insertVersion.run(p);
  });
  const updateTx = sqlite.transaction((a: AppletInsert): boolean => {
    const p = params(a, "save");
    if (update.run(p).changes === 0) return false;
    insertVersion.run(p);
    return true;
  });

  return {
    get: (id: string): Applet | null => {
      const r = byId.get(id);
      return r ? toApplet(r) : null;
    },
    list: (): Applet[] => all.all().map(toApplet),
    listByTriggerType: (type: string, opts: { includeDisabled?: boolean } = {}): Applet[] =>
      sqlite
        .prepare<[string, number], AppletRowRaw>(`SELECT ${APPLET_COLUMNS} FROM applets WHERE trigger_type = ? AND enabled >= ?`)
        .all(type, opts.includeDisabled ? 0 : 1)
        .map(toApplet),
    insert: (a: AppletInsert): void => insertTx(a),
    update: (a: AppletInsert): boolean => updateTx(a),
    versions: (id: string): AppletVersion[] => versionsOf.all(id).map(toVersion),
    version: (id: string, version: number): AppletVersion | null => {
      const r = versionOf.get(id, version);
      return r ? toVersion(r) : null;
    },
    rewriteVersion: (id: string, version: number, definition: unknown, now: string): boolean => {
      // A purge: the text it replaces must not stay readable in the page's free space.
      const before = Number(sqlite.pragma("secure_delete", { simple: true }));
      sqlite.pragma("secure_delete = ON");
      try {
        return rewriteVersion.run(JSON.stringify(definition), now, id, version).changes > 0;
      } finally {
        sqlite.pragma(`secure_delete = ${before === 1 ? "ON" : "OFF"}`);
      }
    },
    setEnabled: (id: string, enabled: boolean, now: string): boolean => setEnabled.run({ enabled: enabled ? 1 : 0, now, id }).changes > 0,
    /** The applet holding a webhook token (tokens are unique), if any. */
    byWebhookToken: (token: string): { id: string; name: string } | null => byToken.get(token) ?? null,
    setWebhookToken: (id: string, token: string): boolean => setToken.run(token, id).changes > 0,
    /** Events, runs and trigger state go with it (ON DELETE CASCADE). */
    delete: (id: string): boolean => remove.run(id).changes > 0,
    /** The hook columns of the applet with this id; null when there is none. */
    forHook: (id: string): HookApplet | null => {
      const r = forHook.get(id);
      return r ? toHookApplet(r) : null;
    },
    setListening: (id: string, until: string | null): boolean => setListening.run(until, id).changes > 0,
    takeListening: (id: string, now: string): boolean => takeListening.run(id, now).changes > 0,
    eventIds: (id: string): string[] =>
      sqlite.prepare<[string], { id: string }>("SELECT id FROM events WHERE applet_id = ?").all(id).map((r) => r.id),
  };
}
