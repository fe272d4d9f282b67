/**
 * What every store shares: the row shape, JSON handling of `input`, patch checks. Internal to the
 * package (not an entry point); the per-database differences stay in each store.
 */
import { ScheduleValidationError, UnreadableScheduleInput } from "../errors";
import { assertValidSchedule, MAX_KEY_LENGTH, validateTiming, withinKeyLength } from "../timing";
import type { Schedule, ScheduleFilter, SchedulePatch } from "../types";

/** Columns as every SQL store names them; dates are integer epoch milliseconds. */
export interface ScheduleRow {
  id: string;
  kind: string;
  target: string;
  interval_spec: string | null;
  cron_expr: string | null;
  time_zone: string | null;
  input_json: string | null;
  enabled: number | boolean;
  next_run_at: number | string | bigint;
  last_run_at: number | string | bigint | null;
  last_run_status: string | null;
  last_run_id: string | null;
  created_at: number | string | bigint;
  updated_at: number | string | bigint;
  created_by: string | null;
}

export const COLUMNS = [
  "id",
  "kind",
  "target",
  "interval_spec",
  "cron_expr",
  "time_zone",
  "input_json",
  "enabled",
  "next_run_at",
  "last_run_at",
  "last_run_status",
  "last_run_id",
  "created_at",
  "updated_at",
  "created_by",
] as const;

export type Column = (typeof COLUMNS)[number];

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,47}$/;

/** Table names and key prefixes end up inside SQL text, so only plain identifiers are accepted. */
export function assertIdentifier(what: string, name: string): string {
  if (!IDENTIFIER.test(name)) {
    throw new ScheduleValidationError(`schedules: invalid ${what} ${JSON.stringify(name)}: use letters, digits and _ (at most 48, not starting with a digit)`);
  }
  return name;
}

export function encodeInput(input: unknown): string | null {
  if (input === undefined || input === null) return null;
  if (input instanceof UnreadableScheduleInput) return input.raw;
  let text: string | undefined;
  try {
    text = JSON.stringify(input);
  } catch (cause) {
    throw new ScheduleValidationError("schedules: input must be JSON-serializable", { cause });
  }
  if (text === undefined) throw new ScheduleValidationError(`schedules: input of type ${typeof input} is not JSON-serializable`);
  return text === "null" ? null : text;
}

export function decodeInput(text: string | null): unknown {
  if (text === null) return undefined;
  try {
    return JSON.parse(text);
  } catch (err) {
    return new UnreadableScheduleInput(text, err instanceof Error ? err.message : String(err));
  }
}

const toMs = (value: number | string | bigint): number => Number(value);

export function toRow(schedule: Schedule): ScheduleRow {
  return {
    id: schedule.id,
    kind: schedule.kind,
    target: schedule.target,
    interval_spec: schedule.interval ?? null,
    cron_expr: schedule.cron ?? null,
    time_zone: schedule.timezone ?? null,
    input_json: encodeInput(schedule.input),
    enabled: schedule.enabled ? 1 : 0,
    next_run_at: schedule.nextRunAt.getTime(),
    last_run_at: schedule.lastRunAt ? schedule.lastRunAt.getTime() : null,
    last_run_status: schedule.lastRunStatus ?? null,
    last_run_id: schedule.lastRunId ?? null,
    created_at: schedule.createdAt.getTime(),
    updated_at: schedule.updatedAt.getTime(),
    created_by: schedule.createdBy ?? null,
  };
}

export function fromRow(row: ScheduleRow): Schedule {
  const schedule: Schedule = {
    id: row.id,
    kind: row.kind,
    target: row.target,
    enabled: row.enabled === true || Number(row.enabled) === 1,
    nextRunAt: new Date(toMs(row.next_run_at)),
    createdAt: new Date(toMs(row.created_at)),
    updatedAt: new Date(toMs(row.updated_at)),
  };
  if (row.interval_spec !== null) schedule.interval = row.interval_spec;
  if (row.cron_expr !== null) schedule.cron = row.cron_expr;
  if (row.time_zone !== null) schedule.timezone = row.time_zone;
  const input = decodeInput(row.input_json);
  if (input !== undefined) schedule.input = input;
  if (row.last_run_at !== null) schedule.lastRunAt = new Date(toMs(row.last_run_at));
  if (row.last_run_status !== null) schedule.lastRunStatus = row.last_run_status;
  if (row.last_run_id !== null) schedule.lastRunId = row.last_run_id;
  if (row.created_by !== null) schedule.createdBy = row.created_by;
  return schedule;
}

/** A deep copy through the same JSON round trip the SQL stores apply, so all stores agree. */
export function cloneSchedule(schedule: Schedule): Schedule {
  return fromRow(toRow(schedule));
}

/** Validates a record for `add` and returns its row. */
export function rowForAdd(schedule: Schedule): ScheduleRow {
  assertValidSchedule(schedule);
  return toRow(schedule);
}

const PATCH_FIELDS: Record<keyof SchedulePatch, Column> = {
  kind: "kind",
  target: "target",
  interval: "interval_spec",
  cron: "cron_expr",
  timezone: "time_zone",
  input: "input_json",
  enabled: "enabled",
  nextRunAt: "next_run_at",
  lastRunAt: "last_run_at",
  lastRunStatus: "last_run_status",
  lastRunId: "last_run_id",
  updatedAt: "updated_at",
  createdBy: "created_by",
};

const isValidDate = (value: unknown): value is Date => value instanceof Date && !Number.isNaN(value.getTime());

/**
 * The columns a patch sets, validated field by field. `updated_at` is always among them (the
 * patch's value, or `now`).
 */
export function patchColumns(patch: SchedulePatch, now: Date): Array<[Column, string | number | null]> {
  const bad = (field: string, message: string): never => {
    throw new ScheduleValidationError(`schedules: patch field ${field} ${message}`);
  };
  const columns: Array<[Column, string | number | null]> = [];
  for (const [key, value] of Object.entries(patch) as Array<[keyof SchedulePatch, unknown]>) {
    const column = PATCH_FIELDS[key];
    if (column === undefined) bad(key, "is not a schedule field (id and createdAt cannot change)");
    if (value === undefined) continue;
    switch (key) {
      case "kind":
        if (typeof value !== "string" || value === "") bad(key, "must be a non-empty string");
        if (!withinKeyLength(value as string)) bad(key, `must be at most ${MAX_KEY_LENGTH} characters`);
        columns.push([column, value as string]);
        break;
      case "target":
        if (typeof value !== "string") bad(key, "must be a string");
        columns.push([column, value as string]);
        break;
      case "enabled":
        if (typeof value !== "boolean") bad(key, "must be a boolean");
        columns.push([column, value ? 1 : 0]);
        break;
      case "input":
        columns.push([column, encodeInput(value)]);
        break;
      case "nextRunAt":
      case "updatedAt":
        if (!isValidDate(value)) bad(key, "must be a valid Date");
        columns.push([column, (value as Date).getTime()]);
        break;
      case "lastRunAt":
        if (value !== null && !isValidDate(value)) bad(key, "must be a valid Date or null");
        columns.push([column, value === null ? null : (value as Date).getTime()]);
        break;
      default:
        if (value !== null && typeof value !== "string") bad(key, "must be a string or null");
        columns.push([column, value as string | null]);
    }
  }
  if (!columns.some(([column]) => column === "updated_at")) columns.push(["updated_at", now.getTime()]);
  return columns;
}

export const touchesTiming = (patch: SchedulePatch): boolean =>
  patch.interval !== undefined || patch.cron !== undefined || patch.timezone !== undefined;

/** Throws unless the timing that results from applying `patch` to `current` is valid. */
export function assertPatchedTiming(current: Schedule, patch: SchedulePatch): void {
  const pick = <K extends "interval" | "cron" | "timezone">(key: K) => (patch[key] === undefined ? current[key] : (patch[key] ?? undefined));
  validateTiming({ interval: pick("interval"), cron: pick("cron"), timezone: pick("timezone") });
}

export function applyPatch(current: Schedule, patch: SchedulePatch, now: Date): Schedule {
  const row = toRow(current) as unknown as Record<Column, unknown>;
  for (const [column, value] of patchColumns(patch, now)) row[column] = value;
  return fromRow(row as unknown as ScheduleRow);
}

export function kindList(kind: ScheduleFilter["kind"]): readonly string[] | undefined {
  if (kind === undefined) return undefined;
  return typeof kind === "string" ? [kind] : kind;
}

export function assertLimit(limit: number | undefined): void {
  if (limit !== undefined && (!Number.isSafeInteger(limit) || limit < 0)) {
    throw new ScheduleValidationError(`schedules: list limit must be a non-negative integer, got ${String(limit)}`);
  }
}

/** A store's own clock, so `list({ due: true })` without `now` and `updatedAt` defaults are injectable. */
export const systemNow = (): Date => new Date();

export function assertClaimDates(expectedNextRunAt: Date, newNextRunAt: Date): void {
  if (!isValidDate(expectedNextRunAt) || !isValidDate(newNextRunAt)) {
    throw new ScheduleValidationError("schedules: claimDue needs valid expectedNextRunAt and newNextRunAt dates");
  }
}
