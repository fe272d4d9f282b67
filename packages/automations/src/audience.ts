import type { AudienceExclusionReason, AudienceMember, AudiencePage, AudienceRequest } from "./types";

/** The action the owner of the people registers; a channel runs it with an AudienceRequest. */
export const AUDIENCE_ACTION_ID = "contacts.audience";
export const AUDIENCE_EXCLUSION_REASONS: readonly AudienceExclusionReason[] = ["no_consent", "revoked", "blocked", "unreachable", "no_address"];
export const AUDIENCE_MAX_LIMIT = 1000;
export const AUDIENCE_DEFAULT_LIMIT = 100;

type Obj = Record<string, unknown>;

function isObject(value: unknown): value is Obj {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function nullableString(value: unknown): string | null | false {
  if (value === undefined || value === null) return null;
  return typeof value === "string" && value !== "" ? value : false;
}

/**
 * Reads an AudienceRequest, untrusted; null when it is not one. `limit` defaults to 100 and is
 * held to 1…1000 so one page cannot ask for the whole audience.
 */
export function parseAudienceRequest(input: unknown): AudienceRequest | null {
  if (!isObject(input)) return null;
  const { channel, purpose, deliverTo } = input;
  if (typeof channel !== "string" || channel === "") return null;
  if (typeof purpose !== "string" || purpose === "") return null;
  if (typeof deliverTo !== "string" || deliverTo === "") return null;
  const tag = nullableString(input.tag);
  const after = nullableString(input.after);
  if (tag === false || after === false) return null;
  let limit = AUDIENCE_DEFAULT_LIMIT;
  if (input.limit !== undefined) {
    if (typeof input.limit !== "number" || !Number.isInteger(input.limit) || input.limit < 1) return null;
    limit = Math.min(input.limit, AUDIENCE_MAX_LIMIT);
  }
  const deliverParams = input.deliverParams ?? {};
  if (!isObject(deliverParams)) return null;
  return { channel, purpose, tag, after, limit, deliverTo, deliverParams };
}

function parseMember(value: unknown): AudienceMember | null {
  if (!isObject(value)) return null;
  if (typeof value.id !== "string" || value.id === "" || typeof value.address !== "string" || value.address === "") return null;
  if (value.name !== undefined && typeof value.name !== "string") return null;
  if (value.timezone !== undefined && typeof value.timezone !== "string") return null;
  if (value.fields !== undefined && !isObject(value.fields)) return null;
  return {
    id: value.id,
    address: value.address,
    ...(value.name !== undefined ? { name: value.name } : {}),
    ...(value.timezone !== undefined ? { timezone: value.timezone } : {}),
    ...(value.fields !== undefined ? { fields: value.fields } : {}),
  };
}

/** Reads an AudiencePage handed to a deliverTo action, untrusted; null when it is not one. */
export function parseAudiencePage(input: unknown): AudiencePage | null {
  if (!isObject(input)) return null;
  const { channel, purpose } = input;
  if (typeof channel !== "string" || channel === "" || typeof purpose !== "string" || purpose === "") return null;
  const tag = nullableString(input.tag);
  const after = nullableString(input.after);
  const next = nullableString(input.next);
  if (tag === false || after === false || next === false) return null;
  if (!Array.isArray(input.contacts)) return null;
  const contacts: AudienceMember[] = [];
  for (const c of input.contacts) {
    const member = parseMember(c);
    if (!member) return null;
    contacts.push(member);
  }
  const excluded: AudiencePage["excluded"] = {};
  const rawExcluded = input.excluded ?? {};
  if (!isObject(rawExcluded)) return null;
  for (const [reason, count] of Object.entries(rawExcluded)) {
    if (!(AUDIENCE_EXCLUSION_REASONS as readonly string[]).includes(reason)) return null;
    if (typeof count !== "number" || !Number.isInteger(count) || count < 0) return null;
    excluded[reason as AudienceExclusionReason] = count;
  }
  return { channel, purpose, tag, after, contacts, next, excluded };
}
