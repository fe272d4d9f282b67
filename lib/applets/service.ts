import type { App } from "../app";
import type { Clock } from "../core/clock";
import { UserError } from "../core/errors";
import { newId, newWebhookToken } from "../core/ids";
import { SYSTEM_AUTHOR, type Applet, type StoreAggregates, type VersionAuthor, type VersionSource } from "../db/store";
import { maxAttemptsOf, storedDefinition, type Definition } from "../definition";
import { ingest } from "../queue/ingest";
import { firstRunOf, polledTrigger } from "../triggers";
import { disabledSlotsNote, scheduleConfigSchema } from "../triggers/schedule";
import { emptyTriggerState } from "../triggers/types";
import { deleteEventFiles } from "../files/events";
import { createCredentialMasks, pluginFields } from "./credential-masks";
import { literalCredentials, PURGED_CREDENTIAL, replaceSpots } from "./credentials";
import { exampleByKey } from "./examples";
import { importApplets, toExport, type ExportedApplet, type ImportMode } from "./transfer";
import { validateApplet, type AppletInput } from "./validate";

type Services = Pick<App, "store" | "clock" | "config" | "bus" | "log">;

/** Applet lifecycle shared by the API, import and the seed script. */
export function createAppletService(app: Services) {
  const { store, clock } = app;
  const masks = createCredentialMasks(app.config.sessionSecret);

  const validate = (input: AppletInput) => validateApplet(input, app.config.allowPrivateUrls);

  const recordDisabledSlots = (before: Applet, on: StoreAggregates = store) => recordDisabledSlotsOf(before, on, clock);
  const schedule = (applet: { id: string; enabled: boolean; definition: Definition }, on: StoreAggregates = store) => scheduleNextRun(applet, on, clock);

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
     * are valid (lib/applets/transfer.ts says how an existing id is treated).
     */
    import: (items: unknown, existing: boolean | ImportMode, replace: readonly string[] = [], by: VersionAuthor = SYSTEM_AUTHOR) =>
      importApplets({ store, clock, masks, validate, schedule }, items, existing, replace, by),
  };
}

export type AppletService = ReturnType<typeof createAppletService>;

/**
 * A schedule enabled again: the fire ledger says which of its slots passed while it was disabled
 * (one row for the stretch; lib/triggers/schedule `disabledSlotsNote`). `before` is the applet as
 * it was disabled: its definition then is what would have fired.
 */
async function recordDisabledSlotsOf(before: Applet, on: StoreAggregates, clock: Clock): Promise<void> {
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
async function scheduleNextRun(applet: { id: string; enabled: boolean; definition: Definition }, on: StoreAggregates, clock: Clock): Promise<void> {
  const now = clock.now();
  const plugin = polledTrigger(applet.definition.trigger.type);
  if (!plugin) return;
  if (!applet.enabled) return on.triggerState.setNextRunAt(applet.id, null, now.toISOString());
  const state = (await on.triggerState.get(applet.id)) ?? emptyTriggerState();
  // The plug-in's first-run rule: a schedule waits for its next slot; a feed or a poll is looked at right away.
  const next = firstRunOf(plugin, applet.definition.trigger.config, now, state);
  await on.triggerState.setNextRunAt(applet.id, next.toISOString(), now.toISOString());
}
