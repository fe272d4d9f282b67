import { newId } from "../../../core/ids";
import { APPLET_COLUMNS, toApplet as toAppletRow, toHookApplet, toVersion as toVersionRow, type AppletRaw, type HookAppletRaw, type VersionRaw } from "../applet-row";
import { SYSTEM_AUTHOR, type AppletInsert, type AppletsStore, type VersionSource } from "../types";
import { query, type Begin, type Queryable } from "./pool";

/** PostgreSQL hands json columns back parsed. */
const toApplet = (r: AppletRaw) => toAppletRow(r, "parsed");
const toVersion = (r: VersionRaw) => toVersionRow(r, "parsed");

const appletParams = (a: AppletInsert) => [a.id, a.name, a.enabled ? 1 : 0, a.triggerType, JSON.stringify(a.definition), a.webhookToken, a.now, a.createdAt ?? a.now, a.tags === undefined ? null : JSON.stringify(a.tags)];

/**
 * Enabling clears an auto-pause and starts the failure streak over, and disabling an enabled
 * applet records when (as on SQLite). `p` is the enabled parameter, `now` the time's.
 */
const unpause = (p: string, now: string) => `paused_reason = CASE WHEN ${p}::int = 1 THEN NULL ELSE paused_reason END,
  paused_at = CASE WHEN ${p}::int = 1 THEN NULL ELSE paused_at END,
  failure_streak = CASE WHEN ${p}::int = 1 AND enabled = 0 THEN 0 ELSE failure_streak END,
  disabled_at = CASE WHEN ${p}::int = 1 THEN NULL WHEN enabled = 1 THEN ${now}::text ELSE disabled_at END`;

/**
 * The next version of the applet, numbered in the statement that writes it. Run after the
 * applet's own INSERT or UPDATE in the same transaction: the UPDATE's row lock makes a second save
 * of the same applet wait for this one's commit, and its INSERT then sees this version (READ
 * COMMITTED reads per statement), so two saves never take the same number; the unique index says so too.
 */
const insertVersion = (c: Queryable, a: AppletInsert, source: VersionSource) => {
  const author = a.author ?? SYSTEM_AUTHOR;
  return query(
    c,
    `INSERT INTO applet_versions (id, applet_id, version, name, enabled, definition, source, restored_from, author_type, author_id, author_label, created_at, updated_at)
     SELECT $1, $2::text, COALESCE(MAX(version), 0) + 1, $3, $4, $5::json, $6, $7, $8, $9, $10, $11, $11
     FROM applet_versions WHERE applet_id = $2::text`,
    [newId(), a.id, a.name, a.enabled ? 1 : 0, JSON.stringify(a.definition), a.source ?? source, a.restoredFrom ?? null, author.kind, author.id, author.label, a.now],
  );
};

export function appletsStore(q: Queryable, begin: Begin): AppletsStore {
  return {
    get: async (id) => {
      const r = (await query<AppletRaw>(q, `SELECT ${APPLET_COLUMNS} FROM applets WHERE id = $1`, [id])).rows[0];
      return r ? toApplet(r) : null;
    },
    list: async () => (await query<AppletRaw>(q, `SELECT ${APPLET_COLUMNS} FROM applets ORDER BY created_at, id`)).rows.map(toApplet),
    listByTriggerType: async (type, opts = {}) =>
      (await query<AppletRaw>(q, `SELECT ${APPLET_COLUMNS} FROM applets WHERE trigger_type = $1 AND enabled >= $2`, [type, opts.includeDisabled ? 0 : 1])).rows.map(toApplet),
    insert: (a) =>
      begin(async (c) => {
        await query(
          c,
          `INSERT INTO applets (id, name, enabled, trigger_type, definition, webhook_token, run_count, tags, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5::json, $6, 0, COALESCE($9::json, '[]'::json), $8, $7)`,
          appletParams(a),
        );
        await insertVersion(c, a, "create");
      }),
    update: (a) =>
      begin(async (c) => {
        const changed =
          ((
            await query(
              c,
              `UPDATE applets SET name = $2, enabled = $3, trigger_type = $4, definition = $5::json, webhook_token = $6, updated_at = $7, tags = COALESCE($8::json, tags), ${unpause("$3", "$7")} WHERE id = $1`,
              [...appletParams(a).slice(0, 7), a.tags === undefined ? null : JSON.stringify(a.tags)],
            )
          ).rowCount ?? 0) > 0;
        if (changed) await insertVersion(c, a, "save");
        return changed;
      }),
    versions: async (id) =>
      (await query<VersionRaw>(q, "SELECT * FROM applet_versions WHERE applet_id = $1 ORDER BY version DESC", [id])).rows.map(toVersion),
    version: async (id, version) => {
      const r = (await query<VersionRaw>(q, "SELECT * FROM applet_versions WHERE applet_id = $1 AND version = $2", [id, version])).rows[0];
      return r ? toVersion(r) : null;
    },
    rewriteVersion: async (id, version, definition, now) =>
      ((await query(q, "UPDATE applet_versions SET definition = $1::json, updated_at = $2 WHERE applet_id = $3 AND version = $4", [JSON.stringify(definition), now, id, version])).rowCount ?? 0) > 0,
    setEnabled: async (id, enabled, now) =>
      ((await query(q, `UPDATE applets SET ${unpause("$1", "$2")}, enabled = $1, updated_at = $2 WHERE id = $3`, [enabled ? 1 : 0, now, id])).rowCount ?? 0) > 0,
    byWebhookToken: async (token) => (await query<{ id: string; name: string }>(q, "SELECT id, name FROM applets WHERE webhook_token = $1", [token])).rows[0] ?? null,
    setWebhookToken: async (id, token) => ((await query(q, "UPDATE applets SET webhook_token = $1 WHERE id = $2", [token, id])).rowCount ?? 0) > 0,
    delete: async (id) => ((await query(q, "DELETE FROM applets WHERE id = $1", [id])).rowCount ?? 0) > 0,
    forHook: async (id) => {
      const r = (
        await query<HookAppletRaw>(
          q,
          "SELECT id, enabled, webhook_token, definition::text AS definition, listen_until FROM applets WHERE id = $1",
          [id],
        )
      ).rows[0];
      return r ? toHookApplet(r) : null;
    },
    setListening: async (id, until) => ((await query(q, "UPDATE applets SET listen_until = $1 WHERE id = $2", [until, id])).rowCount ?? 0) > 0,
    // ISO times compare as text (one format, toISOString's).
    takeListening: async (id, now) => ((await query(q, "UPDATE applets SET listen_until = NULL WHERE id = $1 AND listen_until > $2", [id, now])).rowCount ?? 0) > 0,
    eventIds: async (id) => (await query<{ id: string }>(q, "SELECT id FROM events WHERE applet_id = $1", [id])).rows.map((r) => r.id),
  };
}
