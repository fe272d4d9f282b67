/**
 * @vibedout/automations: time-based automation rules. Runtime-agnostic (WebCrypto, Intl): this
 * entry imports nothing from Node, so it runs on Cloudflare Workers as it does on Node.
 */
export type * from "./types";
export { parseRule, parseConditions, CONDITION_OPS, DEFAULT_LATENESS, DEFAULT_TIMEZONE } from "./rule";
export { parseDuration, durationMs } from "./duration";
export {
  evaluateConditions,
  evaluateCondition,
  explainConditions,
  explainCondition,
  conditionScope,
  resolvePath,
  patternProblem,
  showValue,
  MISSING,
  CONDITION_ROOTS,
  PATTERN_MAX_LENGTH,
  type ConditionScope,
  type AnyConditionScope,
  type ConditionVerdict,
  type Missing,
} from "./conditions";
export { runId, type RunIdParts } from "./run-id";
export { planRuns, planEvent, planEventSync, cancelKeyOf, contactTimeZone, quietHoursEnd } from "./plan";
export { sweepDue, anchorUnchanged, PermanentActionError, RetryableActionError, DEFAULT_SWEEP_LIMIT } from "./sweep";
export { zonedWallToInstant, instantToZonedWall, zoneOffsetMs, isValidTimeZone, parseClockTime, readInstant, type WallTime } from "./time";
export { RUN_STATUSES, FINISHED_RUN_STATUSES, RUN_REASONS, MESSAGE_STATUSES, MESSAGE_STATUS_RANK, MESSAGE_FAILURE_STATUSES, advanceMessageStatus, isMessageStatus } from "./status";
export { messageEventType, messagePreview, parseMessageEventPayload, MESSAGE_PREVIEW_LENGTH } from "./messages";
export { AUDIENCE_ACTION_ID, AUDIENCE_EXCLUSION_REASONS, AUDIENCE_DEFAULT_LIMIT, AUDIENCE_MAX_LIMIT, parseAudienceRequest, parseAudiencePage } from "./audience";
