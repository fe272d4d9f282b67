import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect } from "vitest";
import type { ActionContext } from "@/lib/actions/types";
import { ActionError } from "@/lib/core/errors";
import { ManualClock } from "@/lib/core/clock";
import { loadConfig, type AppConfig } from "@/lib/core/config";
import { silentLogger } from "@/lib/core/log";
import { createSafeFetch } from "@/lib/net/safe-fetch";
import { createRedactor } from "@/lib/secrets/redact";

/**
 * An ActionContext for calling one action directly, as the executor would: the real safeFetch
 * (msw intercepts its node:http requests, so nothing leaves the process), a ManualClock whose
 * `sleep` only moves time, and the warnings and saved progress captured for assertions.
 */
export interface TestActionContext extends ActionContext {
  clock: ManualClock;
  warnings: string[];
  /** Every `saveProgress` call, in order. */
  savedProgress: unknown[];
  /** Every value the action registered with `secret`. */
  secrets: string[];
}

const tempDirs: string[] = [];

/** A fresh temp folder, removed by `removeTempDirs`. */
export function makeTempDir(prefix = "whenthen-actions-"): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  tempDirs.push(dir);
  return dir;
}

export function removeTempDirs(): void {
  for (const dir of tempDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/**
 * The mocked hosts (hooks.slack.com, status.test, …) do not resolve offline, so DNS answers with
 * a documentation address; msw answers before any socket connects to it.
 */
const offlineLookup = async () => [{ address: "192.0.2.1", family: 4 }];

export interface ActionContextOptions {
  /** Environment for loadConfig; DATA_DIR defaults to a fresh temp folder. */
  env?: Record<string, string | undefined>;
  config?: Partial<AppConfig>;
  progress?: unknown;
  clock?: ManualClock;
  attempt?: number;
  actionIndex?: number;
}

export function createActionContext(opts: ActionContextOptions = {}): TestActionContext {
  const env = { DATA_DIR: opts.env?.DATA_DIR ?? makeTempDir(), ...opts.env };
  const config: AppConfig = { ...loadConfig(env), ...opts.config };
  const warnings: string[] = [];
  const savedProgress: unknown[] = [];
  const secrets: string[] = [];
  // The executor's redactor, as the executor wires it: what the action registers is redacted.
  const redactor = createRedactor();
  const ctx: TestActionContext = {
    http: createSafeFetch({ allowPrivate: true, lookup: offlineLookup }),
    clock: opts.clock ?? new ManualClock("2026-03-01T12:00:00.000Z"),
    log: silentLogger,
    config,
    run: {
      runId: "run-1",
      appletId: "applet-1",
      eventId: "event-1",
      attempt: opts.attempt ?? 1,
      actionIndex: opts.actionIndex ?? 0,
    },
    idempotencyKey: `event-1:${opts.actionIndex ?? 0}`,
    warn: (message) => void warnings.push(message),
    progress: opts.progress,
    saveProgress: async (progress) => void savedProgress.push(structuredClone(progress)),
    secret: (value) => {
      secrets.push(value);
      redactor.add([value]);
    },
    redact: (value) => redactor.redact(value),
    warnings,
    savedProgress,
    secrets,
  };
  return ctx;
}

/**
 * The next attempt of the same step, as the executor builds it after a retryable failure: same
 * config and clock, attempt + 1, and `progress` = what the failed attempt saved last.
 */
export function retryContext(previous: TestActionContext): TestActionContext {
  const next = createActionContext({
    env: { DATA_DIR: previous.config.dataDir },
    config: previous.config,
    clock: previous.clock,
    attempt: previous.run.attempt + 1,
    actionIndex: previous.run.actionIndex,
    progress: previous.savedProgress.at(-1) ?? previous.progress,
  });
  return next;
}

/** Awaits a promise that must reject with an ActionError, and returns the error for assertions. */
export async function failure(promise: Promise<unknown>): Promise<ActionError> {
  const err = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ActionError);
  return err as ActionError;
}
