import type { Condition, Conditions, Contact, RuleEvent } from "./types";

/** What a condition path reads: `payload.…`, `contact.…` (the contact's fields, id, timezone) and `event.…`. */
export interface ConditionScope {
  payload: Record<string, unknown>;
  contact: Record<string, unknown>;
  event: Record<string, unknown>;
}

export const CONDITION_ROOTS = ["payload", "contact", "event"] as const;

export function conditionScope(event: RuleEvent, contact?: Contact | null): ConditionScope {
  return {
    payload: event.payload ?? {},
    contact: contact ? { ...contact.fields, id: contact.id, ...(contact.timezone ? { timezone: contact.timezone } : {}) } : {},
    event: {
      id: event.id,
      type: event.type,
      occurredAt: event.occurredAt,
      subject: event.subject,
      contactId: event.contactId ?? null,
    },
  };
}

const MISSING = Symbol("missing");
/** A value found at a path, or MISSING (`unknown` already includes the symbol; the name says it is possible). */
type Found = unknown;

function own(value: object, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(value, key);
}

/** Follows a dotted path; list elements by index ("items.0.sku"). Undefined counts as missing. */
function resolve(root: unknown, path: readonly string[]): Found {
  let current: unknown = root;
  for (const key of path) {
    if (current === null || typeof current !== "object" || !own(current, key)) return MISSING;
    current = (current as Record<string, unknown>)[key];
  }
  return current === undefined ? MISSING : current;
}

function comparable(a: unknown, b: unknown): [number, number] | [string, string] | null {
  if (typeof a === "number" && typeof b === "number") return [a, b];
  if (typeof a === "string" && typeof b === "string") return [a, b];
  if (a instanceof Date && typeof b === "number") return [a.getTime(), b];
  return null;
}

function equal(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== "object" || typeof b !== "object") return false;
  try {
    return JSON.stringify(a) === JSON.stringify(b);
  } catch {
    // A circular or BigInt-holding payload is not equal to anything a rule can write.
    return false;
  }
}

function inList(found: unknown, list: unknown): boolean {
  if (!Array.isArray(list)) return false;
  // A list field (a contact's tags) is in the list when any element is.
  if (Array.isArray(found)) return found.some((item) => list.some((candidate) => equal(item, candidate)));
  return list.some((candidate) => equal(found, candidate));
}

/** One condition against the scope. A missing path fails eq, in, contains and the comparisons; it passes ne, not_in and exists: false. */
export function evaluateCondition(condition: Condition, scope: ConditionScope): boolean {
  const found = resolve(scope, condition.field.split("."));
  const missing = found === MISSING;
  switch (condition.op) {
    case "exists":
      return condition.value === false ? missing : !missing;
    case "eq":
      return !missing && equal(found, condition.value);
    case "ne":
      return missing || !equal(found, condition.value);
    case "in":
      return !missing && inList(found, condition.value);
    case "not_in":
      return missing || !inList(found, condition.value);
    case "contains":
      if (missing) return false;
      if (typeof found === "string") return typeof condition.value === "string" && found.includes(condition.value);
      if (Array.isArray(found)) return found.some((item) => equal(item, condition.value));
      return false;
    case "gt":
    case "gte":
    case "lt":
    case "lte": {
      if (missing) return false;
      const pair = comparable(found, condition.value);
      if (!pair) return false;
      const [a, b] = pair;
      if (condition.op === "gt") return a > b;
      if (condition.op === "gte") return a >= b;
      if (condition.op === "lt") return a < b;
      return a <= b;
    }
    default:
      return false;
  }
}

/** Every `all` holds and, when `any` has entries, at least one of them holds. */
export function evaluateConditions(conditions: Conditions | undefined | null, scope: ConditionScope): boolean {
  if (!conditions) return true;
  for (const c of conditions.all ?? []) if (!evaluateCondition(c, scope)) return false;
  const any = conditions.any ?? [];
  return any.length === 0 || any.some((c) => evaluateCondition(c, scope));
}
