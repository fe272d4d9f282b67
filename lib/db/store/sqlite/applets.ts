import type { applets } from "../../schema";
import type { Applet, AppletInsert, HookApplet } from "../types";
import type { Sqlite } from "./client";
import type { RawRow } from "./rows";
import { readJson } from "./json";

type AppletRowRaw = RawRow<typeof applets>;

const toApplet = (r: AppletRowRaw): Applet => ({
  id: r.id,
  name: r.name,
  enabled: r.enabled === 1,
  triggerType: r.trigger_type,
  definition: readJson<Record<string, unknown>>(r.definition, `the stored definition of applet ${r.id}`),
  webhookToken: r.webhook_token,
  lastFiredAt: r.last_fired_at,
  runCount: r.run_count,
  tags: readTags(r.tags),
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

/** A tags column that is not a JSON array of text (written by hand) reads as no tags: it must not make the applet unreadable. */
function readTags(text: string): string[] {
  try {
    const v = JSON.parse(text) as unknown;
    return Array.isArray(v) ? v.filter((t): t is string => typeof t === "string") : [];
  } catch {
    return [];
  }
}

export type AppletsRepo = ReturnType<typeof createAppletsRepo>;

export function createAppletsRepo(sqlite: Sqlite) {
  const byId = sqlite.prepare<[string], AppletRowRaw>("SELECT * FROM applets WHERE id = ?");
  const all = sqlite.prepare<[], AppletRowRaw>("SELECT * FROM applets ORDER BY created_at, id");
  const insert = sqlite.prepare(
    `INSERT INTO applets (id, name, enabled, trigger_type, definition, webhook_token, run_count, tags, created_at, updated_at)
     VALUES (@id, @name, @enabled, @triggerType, @definition, @webhookToken, 0, COALESCE(@tags, '[]'), @createdAt, @now)`,
  );
  const update = sqlite.prepare(
    `UPDATE applets SET name = @name, enabled = @enabled, trigger_type = @triggerType, definition = @definition,
       webhook_token = @webhookToken, tags = COALESCE(@tags, tags), updated_at = @now WHERE id = @id`,
  );
  const setEnabled = sqlite.prepare("UPDATE applets SET enabled = ?, updated_at = ? WHERE id = ?");
  const setToken = sqlite.prepare("UPDATE applets SET webhook_token = ? WHERE id = ?");
  const byToken = sqlite.prepare<[string], { id: string; name: string }>("SELECT id, name FROM applets WHERE webhook_token = ?");
  const remove = sqlite.prepare("DELETE FROM applets WHERE id = ?");
  // The webhook hot path reads four columns of one row by primary key. Every applet has a token,
  // but only an applet whose trigger is fed by requests answers on it: the ingress asks the trigger
  // registry (any other type answers 404, like an unknown hook).
  const forHook = sqlite.prepare<[string], { id: string; enabled: number; webhook_token: string; definition: string }>(
    "SELECT id, enabled, webhook_token, definition FROM applets WHERE id = ?",
  );

  const params = (a: AppletInsert) => ({
    id: a.id,
    name: a.name,
    enabled: a.enabled ? 1 : 0,
    triggerType: a.triggerType,
    definition: JSON.stringify(a.definition),
    webhookToken: a.webhookToken,
    now: a.now,
    createdAt: a.createdAt ?? a.now,
    tags: a.tags === undefined ? null : JSON.stringify(a.tags),
  });

  return {
    get: (id: string): Applet | null => {
      const r = byId.get(id);
      return r ? toApplet(r) : null;
    },
    list: (): Applet[] => all.all().map(toApplet),
    listByTriggerType: (type: string): Applet[] =>
      sqlite
        .prepare<[string], AppletRowRaw>("SELECT * FROM applets WHERE trigger_type = ? AND enabled = 1")
        .all(type)
        .map(toApplet),
    insert: (a: AppletInsert): void => void insert.run(params(a)),
    update: (a: AppletInsert): boolean => update.run(params(a)).changes > 0,
    setEnabled: (id: string, enabled: boolean, now: string): boolean => setEnabled.run(enabled ? 1 : 0, now, id).changes > 0,
    /** The applet holding a webhook token (tokens are unique), if any. */
    byWebhookToken: (token: string): { id: string; name: string } | null => byToken.get(token) ?? null,
    setWebhookToken: (id: string, token: string): boolean => setToken.run(token, id).changes > 0,
    /** Events, runs and trigger state go with it (ON DELETE CASCADE). */
    delete: (id: string): boolean => remove.run(id).changes > 0,
    /** The hook columns of the applet with this id; null when there is none. */
    forHook: (id: string): HookApplet | null => {
      const r = forHook.get(id);
      return r ? { id: r.id, enabled: r.enabled === 1, webhookToken: r.webhook_token, definition: r.definition } : null;
    },
    eventIds: (id: string): string[] =>
      sqlite.prepare<[string], { id: string }>("SELECT id FROM events WHERE applet_id = ?").all(id).map((r) => r.id),
  };
}
