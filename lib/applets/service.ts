import type { App } from "../app";
import { isIsoDateTime } from "../core/dates";
import { UserError } from "../core/errors";
import { newId, newWebhookToken } from "../core/ids";
import { SYSTEM_AUTHOR, type Applet, type StoreAggregates, type VersionAuthor, type VersionSource } from "../db/store";
import { checkDefinition, isActionStep, pathAsWritten, maxAttemptsOf, storedDefinition, walkSteps, type Definition } from "../definition";
import { checkUrlForSave } from "../net/safe-fetch";
import { ingest } from "../queue/ingest";
import { actionRegistry } from "../actions";
import { firstRunOf, getTrigger, polledTrigger } from "../triggers";
import { disabledSlotsNote, scheduleConfigSchema } from "../triggers/schedule";
import { emptyTriggerState } from "../triggers/types";
import { deleteEventFiles } from "../files/events";
import { createCredentialMasks, pluginFields } from "./credential-masks";
import { credentialSpots, literalCredentials, maskedFingerprint, PURGED_CREDENTIAL, replaceSpots } from "./credentials";
import { exampleByKey } from "./examples";
import { normaliseTags } from "./tags";

export interface AppletInput {
  name: string;
  enabled?: boolean;
  definition: unknown;
  /** Short labels (lib/applets/tags); absent on update keeps the stored ones. */
  tags?: unknown;
}

/** One applet as exported: enough to recreate it with the same id and webhook URL. */
export interface ExportedApplet {
  id: string;
  name: string;
  enabled: boolean;
  webhook_token: string;
  definition: Definition;
  created_at?: string;
  /** An export from before tags has none. */
  tags?: string[];
}

type Services = Pick<App, "store" | "clock" | "config" | "bus" | "log">;

/** Applet lifecycle shared by the API, import and the seed script. */
export function createAppletService(app: Services) {
  const { store, clock } = app;
  const masks = createCredentialMasks(app.config.sessionSecret);

  function validate(input: AppletInput): { name: string; definition: Definition; tags: string[] | undefined } {
    // A credential still masked (a view's "[hidden credential …]" this applet does not hold) or
    // purged cannot be saved: said in words at its field, instead of the plug-in's "not a URL".
    const held = credentialProblems(input?.definition);
    const problems: { path: string; message: string }[] = [...held];
    const tagged = input?.tags === undefined ? null : normaliseTags(input.tags);
    if (tagged && !tagged.ok) problems.push({ path: "tags", message: tagged.message });
    const name = typeof input?.name === "string" ? input.name.trim() : "";
    if (!name) problems.push({ path: "name", message: "required" });
    else if (name.length > 200) problems.push({ path: "name", message: "at most 200 characters" });
    const checked = checkDefinition(input?.definition);
    if (!checked.ok) {
      const said = new Set(held.map((p) => p.path));
      problems.push(...checked.problems.map((p) => ({ path: `definition.${p.path}`.replace(/\.$/, ""), message: p.message })).filter((p) => !said.has(p.path)));
    }
    else problems.push(...urlProblems(checked.definition, app.config.allowPrivateUrls).map((p) => ({ ...p, path: `definition.${pathAsWritten(input?.definition, checked.definition, p.path.slice("definition.".length))}` })));
    if (problems.length || !checked.ok) {
      throw new UserError(`applet: ${problems.length} problem(s): ${problems.map((p) => `${p.path}: ${p.message}`).join("; ")}`, problems);
    }
    return { name, definition: checked.definition, tags: tagged?.ok ? tagged.tags : undefined };
  }

  /**
   * A schedule enabled again: the fire ledger says which of its slots passed while it was disabled
   * (one row for the stretch; lib/triggers/schedule `disabledSlotsNote`). `before` is the applet as
   * it was disabled: its definition then is what would have fired.
   */
  async function recordDisabledSlots(before: Applet, on: StoreAggregates = store): Promise<void> {
    if (before.enabled || !before.disabledAt) return;
    const def = storedDefinition(before.definition);
    if (def.trigger.type !== "schedule") return;
    const config = scheduleConfigSchema.safeParse(def.trigger.config);
    if (!config.success) return;
    const now = clock.now();
    const note = disabledSlotsNote(config.data, new Date(before.disabledAt), now, before.pausedReason);
    if (note) await on.fires.record([{ appletId: before.id, ...note }], now.toISOString());
  }

  /** next_run_at has one source: this, on save and on enable. */
  async function schedule(applet: { id: string; enabled: boolean; definition: Definition }, on: StoreAggregates = store): Promise<void> {
    const now = clock.now();
    const plugin = polledTrigger(applet.definition.trigger.type);
    if (!plugin) return;
    if (!applet.enabled) return on.triggerState.setNextRunAt(applet.id, null, now.toISOString());
    const state = (await on.triggerState.get(applet.id)) ?? emptyTriggerState();
    // The plug-in's first-run rule: a schedule waits for its next slot; a feed or a poll is looked at right away.
    const next = firstRunOf(plugin, applet.definition.trigger.config, now, state);
    await on.triggerState.setNextRunAt(applet.id, next.toISOString(), now.toISOString());
  }

  function toExport(a: Applet): ExportedApplet {
    return { id: a.id, name: a.name, enabled: a.enabled, webhook_token: a.webhookToken, definition: storedDefinition(a.definition), created_at: a.createdAt, tags: a.tags };
  }

  return {
    validate,

    /** `by`: who saves it (its version 1 says so); whenthen itself when not given (scripts, benches). */
    async create(input: AppletInput & { id?: string; webhookToken?: string; createdAt?: string; by?: VersionAuthor; source?: VersionSource }): Promise<Applet> {
      const { name, definition, tags } = validate(input);
      const now = clock.now().toISOString();
      const id = input.id ?? newId();
      const enabled = input.enabled ?? true;
      const version = { author: input.by ?? SYSTEM_AUTHOR, source: input.source ?? "create" };
      await store.applets.insert({ id, name, enabled, triggerType: definition.trigger.type, definition, webhookToken: input.webhookToken ?? newWebhookToken(), now, createdAt: input.createdAt, tags: tags ?? [], ...version });
      await schedule({ id, enabled, definition });
      return (await store.applets.get(id))!;
    },

    /** A save: the applet and its next version (by `by`) in one transaction. */
    async update(id: string, input: Partial<AppletInput>, by: VersionAuthor = SYSTEM_AUTHOR, how: { source?: VersionSource; restoredFrom?: number } = {}): Promise<Applet | null> {
      const current = await store.applets.get(id);
      if (!current) return null;
      // What an API token read had its credentials masked: sent back, they are the stored ones.
      const sent = input.definition ?? current.definition;
      const merged = { name: input.name ?? current.name, enabled: input.enabled ?? current.enabled, definition: masks.unmask(sent, current.definition), tags: input.tags };
      const { name, definition, tags } = validate(merged);
      const triggerChanged = JSON.stringify(definition.trigger) !== JSON.stringify(current.definition.trigger);
      await store.applets.update({
        id,
        name,
        enabled: merged.enabled,
        triggerType: definition.trigger.type,
        definition,
        webhookToken: current.webhookToken,
        now: clock.now().toISOString(),
        author: by,
        source: how.source ?? "save",
        restoredFrom: how.restoredFrom ?? null,
        tags,
      });
      if (merged.enabled && !current.enabled) await recordDisabledSlots(current);
      if (triggerChanged || merged.enabled !== current.enabled) await schedule({ id, enabled: merged.enabled, definition });
      return store.applets.get(id);
    },

    /**
     * "Restore this version": a new save of that version's name and definition (so it is itself a
     * version, and undoable), checked against today's rules first; the enabled state stays as it is
     * now (restoring never switches an applet on or off). null when the applet or the version does
     * not exist; a UserError naming each field when the old definition no longer validates.
     */
    async restore(id: string, version: number, by: VersionAuthor = SYSTEM_AUTHOR): Promise<Applet | null> {
      const old = await store.applets.version(id, version);
      if (!old) return null;
      try {
        validate({ name: old.name, definition: old.definition });
      } catch (err) {
        if (!(err instanceof UserError)) throw err;
        const problems = err.details ?? [];
        throw new UserError(
          `restore: version ${version} no longer validates, nothing was restored: ${problems.map((p) => `${p.path}: ${p.message}`).join("; ")}`,
          problems,
        );
      }
      return this.update(id, { name: old.name, definition: old.definition }, by, { source: "restore", restoredFrom: version });
    },

    /**
     * "Purge this version's credentials": the version's literal credentials are replaced by
     * "[credential purged]" where it is stored (nothing else of it changes, and no version is
     * added). Refused for the current version while the applet still uses them: they are moved to
     * secrets by a save first. null when the applet or the version does not exist.
     */
    async purgeCredentials(id: string, version: number): Promise<{ purged: string[] } | null> {
      const v = await store.applets.version(id, version);
      if (!v) return null;
      const spots = literalCredentials(v.definition, pluginFields);
      if (spots.length === 0) return { purged: [] };
      const current = await store.applets.get(id);
      if (current?.version === version) {
        throw new UserError(
          `purge: version ${version} is the applet's current definition, which still uses ${spots.map((s) => s.label).join(", ")}; move ${spots.length === 1 ? "it" : "them"} to a secret in the editor and save (a new version), then purge version ${version}`,
          spots.map((s) => ({ path: `definition.${s.path.join(".")}`, message: "written literally in the current definition" })),
        );
      }
      await store.applets.rewriteVersion(id, version, replaceSpots(v.definition, spots, () => PURGED_CREDENTIAL), clock.now().toISOString());
      return { purged: spots.map((s) => s.label) };
    },

    async setEnabled(id: string, enabled: boolean): Promise<Applet | null> {
      const current = await store.applets.get(id);
      if (!current) return null;
      await store.applets.setEnabled(id, enabled, clock.now().toISOString());
      if (enabled) await recordDisabledSlots(current);
      await schedule({ id, enabled, definition: storedDefinition(current.definition) });
      return store.applets.get(id);
    },

    /** Deletes the applet with its events, runs, trigger state and attachments. */
    async delete(id: string): Promise<boolean> {
      const eventIds = await store.applets.eventIds(id);
      const ok = await store.applets.delete(id);
      if (ok) await deleteEventFiles(app, eventIds);
      return ok;
    },

    /**
     * "Duplicate": a copy named "<name> (copy)", disabled (two applets firing on one trigger is
     * rarely meant), with its own id and webhook token and no events, runs or trigger state.
     */
    async duplicate(id: string, by: VersionAuthor = SYSTEM_AUTHOR): Promise<Applet | null> {
      const current = await store.applets.get(id);
      if (!current) return null;
      const name = `${current.name} (copy)`.slice(0, 200);
      return this.create({ name, enabled: false, definition: current.definition, tags: current.tags, by, source: "duplicate" });
    },

    /**
     * Onboarding: one of the ready examples (lib/applets/examples) as a new applet, disabled
     * until its owner has looked at it; null for an unknown key.
     */
    async fromExample(key: string, by: VersionAuthor = SYSTEM_AUTHOR): Promise<Applet | null> {
      const example = exampleByKey(key);
      if (!example) return null;
      return this.create({ name: example.name, enabled: false, definition: example.definition({ inboundDomain: app.config.inboundDomain }), by });
    },

    /** "Send test event": a manual event with the given payload and a queued run. */
    async test(id: string, payload: unknown): Promise<{ eventId: string; runId: string }> {
      const applet = await store.applets.get(id);
      if (!applet) throw new UserError(`applet: no applet with id "${id}"`);
      if (!payload || typeof payload !== "object" || Array.isArray(payload)) throw new UserError("test: the payload must be a JSON object", [{ path: "payload", message: "expected an object" }]);
      const definition = storedDefinition(applet.definition);
      const result = await ingest(app, { appletId: id, source: "manual", dedupeKey: null, payload: payload as Record<string, unknown>, maxAttempts: maxAttemptsOf(definition), definition });
      return result!;
    },

    exportAll: async (): Promise<ExportedApplet[]> => (await store.applets.list()).map(toExport),
    exportOne: async (id: string): Promise<ExportedApplet | null> => {
      const a = await store.applets.get(id);
      return a ? toExport(a) : null;
    },

    /**
     * Imports an export file: every applet is validated first and nothing is written unless all
     * are valid. An id that exists here is refused (`false`, "refuse"), replaced (`true`,
     * "replace"), or skipped ("skip": the new ones are imported, the existing ones left as they
     * are, except those listed in `replace`). Each imported applet gets a new version by `by`
     * (an export file carries the current version only, never the history).
     */
    async import(items: unknown, existing: boolean | ImportMode, replace: readonly string[] = [], by: VersionAuthor = SYSTEM_AUTHOR): Promise<{ created: string[]; replaced: string[]; skipped?: string[] }> {
      const mode: ImportMode = existing === true ? "replace" : existing === false ? "refuse" : existing;
      const replaceIds = new Set(replace);
      const overwrite = mode !== "refuse";
      const skipped: string[] = [];
      const skips = async (id: string) => mode === "skip" && !replaceIds.has(id) && (await store.applets.get(id)) !== null;
      if (!Array.isArray(items)) throw new UserError("import: expected a JSON array of applets", [{ path: "", message: "expected an array" }]);
      const problems: { path: string; message: string }[] = [];
      const valid: { index: number; item: ExportedApplet; definition: Definition; name: string; tags: string[] | undefined }[] = [];
      const seen = new Set<string>();
      // token -> position in the file
      const tokens = new Map<string, number>();
      for (const [i, raw] of items.entries()) {
        const item = raw as Partial<ExportedApplet>;
        if (!item || typeof item !== "object") {
          problems.push({ path: `${i}`, message: "expected an object" });
          continue;
        }
        const extra = Object.keys(item).filter((k) => !["id", "name", "enabled", "webhook_token", "definition", "created_at", "tags"].includes(k));
        if (extra.length) problems.push({ path: `${i}`, message: `unknown key${extra.length > 1 ? "s" : ""}: ${extra.join(", ")}` });
        const idProblem = appletIdProblem(item.id);
        if (idProblem) problems.push({ path: `${i}.id`, message: idProblem });
        else if (seen.has(item.id!)) problems.push({ path: `${i}.id`, message: `duplicate id ${item.id}` });
        else seen.add(item.id!);
        const tokenProblem = webhookTokenProblem(item.webhook_token);
        if (tokenProblem) problems.push({ path: `${i}.webhook_token`, message: tokenProblem });
        else if (tokens.has(item.webhook_token!)) problems.push({ path: `${i}.webhook_token`, message: `same webhook token as applet ${tokens.get(item.webhook_token!)} in this file; each applet needs its own` });
        else tokens.set(item.webhook_token!, i);
        if (item.created_at !== undefined && !isIsoDateTime(item.created_at)) {
          problems.push({ path: `${i}.created_at`, message: `must be an ISO 8601 date and time such as 2026-03-07T13:00:00.000Z, got ${JSON.stringify(item.created_at)?.slice(0, 60)}` });
        }
        if (item.enabled !== undefined && typeof item.enabled !== "boolean") problems.push({ path: `${i}.enabled`, message: "must be true or false" });
        try {
          // An export an API token made has its credentials masked: they are the replaced applet's.
          const existing = typeof item.id === "string" && !appletIdProblem(item.id) ? await store.applets.get(item.id) : null;
          const definition = existing ? masks.unmask(item.definition, existing.definition) : item.definition;
          const v = validate({ name: item.name ?? "", definition, tags: item.tags });
          if (typeof item.id === "string" && !overwrite && (await store.applets.get(item.id))) {
            problems.push({ path: `${i}.id`, message: `an applet with id ${item.id} exists; import with overwrite to replace it` });
          }
          if (typeof item.id === "string" && (await skips(item.id))) skipped.push(item.id);
          else valid.push({ index: i, item: item as ExportedApplet, ...v });
        } catch (err) {
          if (err instanceof UserError) problems.push(...(err.details ?? []).map((p) => ({ path: `${i}.${p.path}`, message: p.message })));
          else throw err;
        }
      }
      // A token held by an applet outside this import would collide with it (the webhook URL is
      // the applet id and its token, and tokens are unique). Only an applet this import replaces
      // may give its token to another one.
      const replacing = new Set(overwrite ? valid.map((v) => v.item.id) : []);
      for (const { index, item } of valid) {
        const holder = await store.applets.byWebhookToken(item.webhook_token);
        if (holder && holder.id !== item.id && !replacing.has(holder.id)) {
          problems.push({
            path: `${index}.webhook_token`,
            message: `this webhook token is already used by applet ${JSON.stringify(holder.name)} (${holder.id}); give the imported applet another webhook_token`,
          });
        }
      }
      if (problems.length) throw new UserError(`import: ${problems.length} problem(s); nothing was imported`, problems);
      const created: string[] = [];
      const replaced: string[] = [];
      await store.transaction(async (tx) => {
        // Replaced applets whose token changes let go of it first, so tokens that move between
        // them (a swap) never meet the unique index twice.
        for (const { item } of valid) {
          const current = await tx.applets.get(item.id);
          if (current && current.webhookToken !== item.webhook_token) await tx.applets.setWebhookToken(item.id, `import-${newWebhookToken()}`);
        }
        for (const { item, definition, name, tags } of valid) {
          const enabled = item.enabled !== false;
          const now = clock.now().toISOString();
          const createdAt = item.created_at === undefined ? now : new Date(item.created_at).toISOString();
          // An export from before tags replaces an applet with no tags: the file is what it restores.
          const row = { id: item.id, name, enabled, triggerType: definition.trigger.type, definition, webhookToken: item.webhook_token, now, createdAt, tags: tags ?? [], author: by, source: "import" as const };
          if (await tx.applets.get(item.id)) {
            await tx.applets.update(row);
            replaced.push(item.id);
          } else {
            await tx.applets.insert(row);
            created.push(item.id);
          }
          await schedule({ id: item.id, enabled, definition }, tx);
        }
      });
      // `skipped` only where skipping was asked for: the answer to the other modes is unchanged.
      return mode === "skip" ? { created, replaced, skipped } : { created, replaced };
    },
  };
}

export type AppletService = ReturnType<typeof createAppletService>;

/** A masked credential with no stored value to stand for, and a purged one: neither can be saved. */
function credentialProblems(definition: unknown): { path: string; message: string }[] {
  return credentialSpots(definition, pluginFields).flatMap((s) => {
    const path = `definition.${s.path.join(".")}`;
    if (s.value === PURGED_CREDENTIAL) {
      return [{ path, message: `${s.label} was purged from this version ("${PURGED_CREDENTIAL}"); write {{secrets.NAME}} here (Settings → Secrets) and save that instead` }];
    }
    if (maskedFingerprint(s.value) !== null) {
      return [{ path, message: `${s.label} is a hidden credential (${s.value}) that this applet does not hold; write the credential here, or better {{secrets.NAME}}` }];
    }
    return [];
  });
}

/** What an import does with an applet whose id exists here. */
export type ImportMode = "refuse" | "replace" | "skip";


/**
 * What an applet id may be: 1 to 64 letters, digits, `-` and `_`, starting with a letter or a digit
 * (every id whenthen makes is a UUID). It becomes a path segment of the webhook URL and of the UI,
 * so a `/`, a `.` or a `%` has no business in it (`x/..` would make URLs that mean another path).
 */
const APPLET_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

export function appletIdProblem(id: unknown): string | null {
  if (typeof id !== "string" || id === "") return "required";
  if (!APPLET_ID.test(id)) return `${JSON.stringify(id.slice(0, 80))} is not a valid id: use 1 to 64 letters, digits, - and _, starting with a letter or digit`;
  return null;
}

/**
 * A webhook token is the only secret in a webhook URL, so an imported one must be as strong as
 * the ones whenthen makes: 32 random bytes in base64url are 43 characters from a 64-letter
 * alphabet, and a random 43-character draw has fewer than 16 distinct characters with probability
 * below 1e-13. Shorter, other characters, or visibly repetitive tokens are refused.
 */
export function webhookTokenProblem(token: unknown): string | null {
  const how = "use 43 or more characters of A-Z, a-z, 0-9, - and _ (32 random bytes in base64url, as whenthen makes them), or export the applet from whenthen";
  if (typeof token !== "string" || token === "") return `required; ${how}`;
  if (!/^[A-Za-z0-9_-]{43,128}$/.test(token) || new Set(token).size < 16) return `too weak to guard a public URL; ${how}`;
  return null;
}

/** URLs a trigger polls or an action calls must be http(s) and not private (checked again at fetch time). */
function urlProblems(def: Definition, allowPrivate: boolean): { path: string; message: string }[] {
  const out: { path: string; message: string }[] = [];
  const check = (value: unknown, where: string) => {
    // Templated URLs are checked when rendered, at fetch time.
    if (typeof value !== "string" || value.includes("{{")) return;
    const problem = checkUrlForSave(value, allowPrivate);
    if (problem) out.push({ path: where, message: problem });
  };
  // Each plug-in names its URL fields (an RSS feed's url, the http action's url).
  for (const key of getTrigger(def.trigger.type).urlFields ?? []) check(def.trigger.config[key], `definition.trigger.config.${key}`);
  for (const { step, path } of walkSteps(def.steps)) {
    if (!isActionStep(step)) continue;
    for (const key of actionRegistry.get(step.type)?.urlFields ?? []) check(step.config[key], `definition.${path}.config.${key}`);
  }
  return out;
}
