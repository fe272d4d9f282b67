import { isIsoDateTime } from "../core/dates";
import { UserError } from "../core/errors";
import { newWebhookToken } from "../core/ids";
import type { Clock } from "../core/clock";
import { storedDefinition, type Definition } from "../definition";
import type { Applet, Store, StoreAggregates, VersionAuthor } from "../db/store";
import type { CredentialMasks } from "./credential-masks";

/**
 * Export files and their import: what an exported applet is, how each item of a file is checked
 * (its id, webhook token, date, and the definition by the service's own `validate`), and the one
 * transaction that writes an import. The applet lifecycle itself is lib/applets/service.ts.
 */

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

/** What an import does with an applet whose id exists here. */
export type ImportMode = "refuse" | "replace" | "skip";

type Problem = { path: string; message: string };

/** What the import needs of the applet service: its checks and its scheduling on save. */
export interface ImportDeps {
  store: Store;
  clock: Clock;
  masks: CredentialMasks;
  validate: (input: { name: string; definition: unknown; tags?: unknown }) => { name: string; definition: Definition; tags: string[] | undefined };
  schedule: (applet: { id: string; enabled: boolean; definition: Definition }, on?: StoreAggregates) => Promise<void>;
}

interface ValidItem {
  index: number;
  item: ExportedApplet;
  definition: Definition;
  name: string;
  tags: string[] | undefined;
}

export function toExport(a: Applet): ExportedApplet {
  return { id: a.id, name: a.name, enabled: a.enabled, webhook_token: a.webhookToken, definition: storedDefinition(a.definition), created_at: a.createdAt, tags: a.tags };
}

/**
 * Imports an export file: every applet is validated first and nothing is written unless all
 * are valid. An id that exists here is refused (`false`, "refuse"), replaced (`true`,
 * "replace"), or skipped ("skip": the new ones are imported, the existing ones left as they
 * are, except those listed in `replace`). Each imported applet gets a new version by `by`
 * (an export file carries the current version only, never the history).
 */
export async function importApplets(
  deps: ImportDeps,
  items: unknown,
  existing: boolean | ImportMode,
  replace: readonly string[],
  by: VersionAuthor,
): Promise<{ created: string[]; replaced: string[]; skipped?: string[] }> {
  const mode: ImportMode = existing === true ? "replace" : existing === false ? "refuse" : existing;
  if (!Array.isArray(items)) throw new UserError("import: expected a JSON array of applets", [{ path: "", message: "expected an array" }]);
  const { problems, valid, skipped } = await checkItems(deps, items, mode, new Set(replace));
  problems.push(...(await tokenCollisions(deps, valid, mode !== "refuse")));
  if (problems.length) throw new UserError(`import: ${problems.length} problem(s); nothing was imported`, problems);
  const { created, replaced } = await writeImport(deps, valid, by);
  // `skipped` only where skipping was asked for: the answer to the other modes is unchanged.
  return mode === "skip" ? { created, replaced, skipped } : { created, replaced };
}

/** Each item of the file on its own and against the others: every problem with its path. */
async function checkItems(deps: ImportDeps, items: unknown[], mode: ImportMode, replaceIds: Set<string>): Promise<{ problems: Problem[]; valid: ValidItem[]; skipped: string[] }> {
  const { store, masks, validate } = deps;
  const overwrite = mode !== "refuse";
  const skipped: string[] = [];
  const skips = async (id: string) => mode === "skip" && !replaceIds.has(id) && (await store.applets.get(id)) !== null;
  const problems: Problem[] = [];
  const valid: ValidItem[] = [];
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
  return { problems, valid, skipped };
}

/**
 * A token held by an applet outside this import would collide with it (the webhook URL is the
 * applet id and its token, and tokens are unique). Only an applet this import replaces may give
 * its token to another one.
 */
async function tokenCollisions({ store }: ImportDeps, valid: ValidItem[], overwrite: boolean): Promise<Problem[]> {
  const problems: Problem[] = [];
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
  return problems;
}

/** The checked applets in one transaction, each a new version by `by`. */
async function writeImport({ store, clock, schedule }: ImportDeps, valid: ValidItem[], by: VersionAuthor): Promise<{ created: string[]; replaced: string[] }> {
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
  return { created, replaced };
}

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

