import { UserError } from "../core/errors";
import { checkDefinition, isActionStep, pathAsWritten, walkSteps, type Definition } from "../definition";
import { checkUrlForSave } from "../net/addresses";
import { actionRegistry } from "../actions";
import { getTrigger } from "../triggers";
import { pluginFields } from "./credential-masks";
import { credentialSpots, maskedFingerprint, PURGED_CREDENTIAL } from "./credentials";
import { normaliseTags } from "./tags";

/**
 * What an applet may be saved as: its name, tags and definition, every problem at once with its
 * path (a credential still masked or purged, the definition's own problems, a URL that may not be
 * fetched). Used by every save: create, update, restore, import.
 */

export interface AppletInput {
  name: string;
  enabled?: boolean;
  definition: unknown;
  /** Short labels (lib/applets/tags); absent on update keeps the stored ones. */
  tags?: unknown;
}

/** The applet as it will be stored, or a UserError naming each problem. */
export function validateApplet(input: AppletInput, allowPrivateUrls: boolean): { name: string; definition: Definition; tags: string[] | undefined } {
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
  else problems.push(...urlProblems(checked.definition, allowPrivateUrls).map((p) => ({ ...p, path: `definition.${pathAsWritten(input?.definition, checked.definition, p.path.slice("definition.".length))}` })));
  if (problems.length || !checked.ok) {
    throw new UserError(`applet: ${problems.length} problem(s): ${problems.map((p) => `${p.path}: ${p.message}`).join("; ")}`, problems);
  }
  return { name, definition: checked.definition, tags: tagged?.ok ? tagged.tags : undefined };
}

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
