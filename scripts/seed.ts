/**
 * Demo data for a development database (`pnpm seed`): the five ready examples of
 * lib/applets/examples (one per trigger type, the same list the applets page offers when it is
 * empty), and four runs per applet in mixed states (succeeded, failed, skipped, dead, queued,
 * running): 20 runs in all.
 *
 *   pnpm seed            validate, then seed DATA_DIR/app.db (or DATABASE_URL)
 *   pnpm seed --check    validate the five definitions only; write nothing
 *
 * Every definition is checked with checkDefinition first and each problem is printed with its
 * path. Applets whose definition is refused (a trigger or action plug-in not registered yet, a
 * config that no longer matches its schema) are left out, and the script exits 1 after seeding
 * the rest. Running it again on a seeded database changes nothing.
 *
 * The RSS and poll applets are created disabled: enabled, a running worker would start polling
 * outside URLs. The webhook, schedule and email applets only act on what is sent to them (or
 * write to the outbox), so they are enabled. The queued and running runs are real queue rows: a
 * worker started on this database picks them up (running ones after the 10 minute stale-lease
 * rule) and runs their actions (notes under NOTES_ROOT, email to the outbox).
 */
import { randomBytes } from "node:crypto";
import path from "node:path";
import { createApp, type App } from "../lib/app";
import { createAppletService } from "../lib/applets/service";
import type { SeedRunState } from "../lib/db/store";
import { checkDefinition, timezoneOf, topLevelActions, type Definition, type FilterStep } from "../lib/definition";
import type { RunStatus, Step } from "../lib/executor/types";
import { toText } from "../lib/core/text";
import { renderConfig } from "../lib/template";
import type { TriggerType } from "../lib/triggers";
import { APPLET_EXAMPLES } from "../lib/applets/examples";

interface Fixture {
  id: string;
  name: string;
  enabled: boolean;
  definition: Record<string, unknown>;
  source: TriggerType;
  /** The event payload (trigger ingredients) of the n-th sample run, received at `at`. */
  payload(n: number, at: Date): Record<string, unknown>;
  dedupeKey(n: number, at: Date, payload: Record<string, unknown>): string | null;
  /** One plan per run, newest first. */
  runs: RunPlan[];
}

/**
 * A run to create. `failAt` is the action index whose step failed (failed, dead, queued retry);
 * `runningAt` the action in flight (running).
 */
interface RunPlan {
  status: RunStatus;
  hoursAgo: number;
  attempt?: number;
  failAt?: number;
  error?: string;
  runningAt?: number;
  skipReason?: string;
}

const HEADLINES = [
  { title: "SQLite is not a toy database", author: "antonz", points: 412 },
  { title: "Show HN: I replaced my IFTTT applets with 200 lines of cron", author: "jkl", points: 233 },
  { title: "Ask HN: What do you self-host in 2026?", author: "throwaway42", points: 187 },
  { title: "The WAL file and you", author: "drh", points: 301 },
];

const CONTACTS = [
  { name: "Dana Whitfield", email: "dana@example.org", message: "Do you ship to Norway?" },
  { name: "Omar Haddad", email: "omar@example.net", message: "The pricing page link in the footer is broken." },
  { name: "Li Wei", email: "li.wei@example.com", message: "Can I get an invoice for order 1042?" },
  { name: "Ann Berg", email: "ann@example.org", message: "Thanks, it works now!" },
];

const PRICES = ["48750.12", "47990.55", "49310.00", "46820.73"];

const iso = (d: Date) => d.toISOString();
const hex = (bytes: number) => randomBytes(bytes).toString("hex");

/**
 * The seed's part of each example: a fixed id, whether it is enabled, its demo events and runs.
 * The applets themselves (names, definitions) are lib/applets/examples, the list the applets
 * page's empty state offers.
 */
interface SeedPlan {
  id: string;
  enabled: boolean;
  payload(n: number, at: Date, inboundDomain: string): Record<string, unknown>;
  dedupeKey(n: number, at: Date, payload: Record<string, unknown>): string | null;
  /** One plan per run, newest first. */
  runs: RunPlan[];
}

const PLANS: Record<string, SeedPlan> = {
  "webhook-to-note": {
    id: "5eed0000-0000-4000-8000-000000000001",
    enabled: true,
    payload: (n, at) => ({
      body: CONTACTS[n % CONTACTS.length]!,
      headers: { "content-type": "application/json", "user-agent": "curl/8.5.0" },
      query: {},
      method: "POST",
      received_at: iso(at),
    }),
    dedupeKey: () => null,
    runs: [
      { status: "succeeded", hoursAgo: 2 },
      { status: "succeeded", hoursAgo: 9 },
      { status: "failed", hoursAgo: 20, failAt: 0, error: "action 1 (note): EACCES: permission denied, open 'notes/inbox/contact-form.md'" },
      { status: "succeeded", hoursAgo: 49 },
    ],
  },
  "schedule-to-email": {
    id: "5eed0000-0000-4000-8000-000000000002",
    enabled: true,
    payload: (_n, at) => {
      const local = new Intl.DateTimeFormat("en-CA", { timeZone: "Europe/Berlin", year: "numeric", month: "2-digit", day: "2-digit" }).format(at);
      const weekday = new Intl.DateTimeFormat("en-US", { timeZone: "Europe/Berlin", weekday: "long" }).format(at);
      return { fired_at: iso(at), fired_at_local: `${local}T08:30:00+01:00`, date: local, time: "08:30", weekday, timezone: "Europe/Berlin" };
    },
    dedupeKey: (_n, at) => iso(at),
    runs: [
      { status: "queued", hoursAgo: 0 },
      { status: "succeeded", hoursAgo: 24 },
      { status: "succeeded", hoursAgo: 48 },
      { status: "succeeded", hoursAgo: 72 },
    ],
  },
  "rss-to-note": {
    id: "5eed0000-0000-4000-8000-000000000003",
    enabled: false,
    payload: (n, at) => {
      const h = HEADLINES[n % HEADLINES.length]!;
      const item = 40_000_000 + n * 7919;
      const content = `<p>Article URL: <a href="https://example.org/${item}">https://example.org/${item}</a></p><p>Points: ${h.points}</p>`;
      return {
        title: h.title,
        link: `https://news.ycombinator.com/item?id=${item}`,
        content,
        summary: `Article URL: https://example.org/${item} Points: ${h.points}`,
        author: h.author,
        published_at: iso(new Date(at.getTime() - 25 * 60_000)),
        categories: [],
        feed_title: "Hacker News: Front Page",
        feed_url: "https://hnrss.org/frontpage",
      };
    },
    dedupeKey: (_n, _at, p) => String(p.link),
    runs: [
      { status: "running", hoursAgo: 0.01, runningAt: 0 },
      { status: "skipped", hoursAgo: 5, skipReason: "discussion thread" },
      { status: "dead", hoursAgo: 30, attempt: 5, failAt: 0, error: "action 1 (note): ENOSPC: no space left on device, write" },
      { status: "succeeded", hoursAgo: 55 },
    ],
  },
  "email-to-note": {
    id: "5eed0000-0000-4000-8000-000000000004",
    enabled: true,
    payload: (n, at, inboundDomain) => {
      const number = `${1040 + n}-${2231 + n * 17}`;
      const text = `Receipt from Fly-by-Night Hosting\nAmount paid: $${(12 + n * 3).toFixed(2)}\nReceipt #${number}\n`;
      return {
        from: "receipts+acct_1Nx@stripe.com",
        from_name: "Fly-by-Night Hosting",
        to: [`receipts@${inboundDomain}`],
        cc: [],
        subject: `Your receipt from Fly-by-Night Hosting #${number}`,
        text,
        html: `<p>${text.replace(/\n/g, "<br>")}</p>`,
        date: iso(at),
        message_id: `<${hex(8)}@mail.stripe.com>`,
        attachments: [],
        text_first_line: "Receipt from Fly-by-Night Hosting",
      };
    },
    dedupeKey: (_n, _at, p) => String(p.message_id),
    runs: [
      { status: "queued", hoursAgo: 0.2, attempt: 2, failAt: 0, error: "action 1 (note): EBUSY: resource busy or locked, open 'notes/finance/receipts.md'" },
      { status: "succeeded", hoursAgo: 26 },
      { status: "failed", hoursAgo: 50, failAt: 0, error: "action 1 (note): EACCES: permission denied, open 'notes/finance/receipts.md'" },
      { status: "succeeded", hoursAgo: 70 },
    ],
  },
  "poll-to-email": {
    id: "5eed0000-0000-4000-8000-000000000005",
    enabled: false,
    payload: (n, at) => {
      const value = PRICES[n % PRICES.length]!;
      return {
        value,
        previous_value: "50210.40",
        url: "https://api.coinbase.com/v2/prices/BTC-USD/spot",
        path: "data.amount",
        changed_at: iso(at),
        response: { data: { base: "BTC", currency: "USD", amount: value } },
        status: 200,
      };
    },
    dedupeKey: (_n, at) => `poll:${iso(at)}`,
    runs: [
      { status: "running", hoursAgo: 0.02, runningAt: 0 },
      { status: "succeeded", hoursAgo: 12 },
      { status: "failed", hoursAgo: 36, failAt: 1, error: "action 2 (note): EACCES: permission denied, open 'notes/finance/btc-prices.md'" },
      { status: "dead", hoursAgo: 60, attempt: 5, failAt: 0, error: "action 1 (email): could not write the message to the outbox: EROFS: read-only file system" },
    ],
  },
};

/** The examples of lib/applets/examples with the seed's plan for each (an example without a plan is seeded with no runs). */
function fixtures(inboundDomain: string): Fixture[] {
  return APPLET_EXAMPLES.map((e, i): Fixture => {
    const plan: SeedPlan = PLANS[e.key] ?? { id: `5eed0000-0000-4000-8000-${String(100 + i).padStart(12, "0")}`, enabled: false, payload: () => ({}), dedupeKey: () => null, runs: [] };
    return {
      id: plan.id,
      name: e.name,
      enabled: plan.enabled,
      source: e.triggerType,
      definition: e.definition({ inboundDomain }),
      payload: (n, at) => plan.payload(n, at, inboundDomain),
      dedupeKey: (n, at, p) => plan.dedupeKey(n, at, p),
      runs: plan.runs,
    };
  });
}

/** What each action would have returned, for succeeded steps. */
function outputFor(type: string, rendered: Record<string, unknown>, app: App, eventId: string, index: number, at: Date): unknown {
  switch (type) {
    case "slack":
      return { status: 200, body: "ok" };
    case "discord":
      return { status: 204, parts: 1 };
    case "email":
      return { path: path.join(app.config.dataDir, "outbox", `${iso(at).replace(/[:.]/g, "-")}-${eventId.slice(0, 8)}.eml`), message_id: `<${eventId}.${index}@whenthen>` };
    case "note":
      return { path: path.join(app.config.notesRoot, toText(rendered.folder ?? ""), toText(rendered.filename ?? "note.md")) };
    case "http":
      return { status: 201, headers: { "content-type": "application/json" }, body: { id: `rcpt_${hex(6)}`, ok: true } };
    default:
      return { ok: true };
  }
}

function buildSteps(app: App, f: Fixture, definition: Definition, plan: RunPlan, payload: Record<string, unknown>, ids: { eventId: string; runId: string }, at: Date): Step[] {
  const steps: Step[] = [];
  const attempt = plan.attempt ?? 1;
  const failedAttempt = plan.status === "queued" ? Math.max(attempt - 1, 1) : attempt;
  let clock = at.getTime() + 150;
  const vars: Record<string, unknown> = {};
  const filter = definition.steps.find((s) => s.type === "filter") as FilterStep | undefined;
  if (filter) {
    const skipped = plan.status === "skipped";
    const body = payload.body as { head_commit?: { id?: string } } | undefined;
    if (!skipped && body?.head_commit?.id) vars.short = body.head_commit.id.slice(0, 7);
    steps.push({
      kind: "filter",
      name: "filter",
      status: skipped ? "skipped" : "succeeded",
      attempt,
      input: { code: filter.code },
      output: skipped ? { skipped: true, reason: plan.skipReason ?? "skipped" } : { vars },
      warnings: [],
      logs: [],
      started_at: iso(new Date(clock)),
      duration_ms: 4,
    });
    clock += 10;
    if (skipped) return steps;
  }
  const timezone = timezoneOf(definition);
  topLevelActions(definition).forEach((action, index) => {
    if (plan.runningAt !== undefined && index > plan.runningAt) return;
    if (plan.failAt !== undefined && index > plan.failAt) return;
    const { rendered, warnings } = renderConfig(
      action.config,
      {
        trigger: payload,
        vars,
        applet: { id: f.id, name: f.name },
        run: { id: ids.runId, attempt },
        now: iso(at),
        // Stored step inputs never hold secret values (spec: Templates); the seed writes what redaction would.
        secrets: () => "[redacted]",
      },
      { timezone },
    );
    const started = new Date(clock);
    const running = plan.runningAt === index;
    const failed = plan.failAt === index;
    const duration = running ? 0 : failed ? 1200 : 180 + index * 90;
    const step: Step = {
      kind: "action",
      name: action.type,
      index,
      status: running ? "running" : failed ? "failed" : "succeeded",
      // Steps that succeeded once are not run again on retry (DESIGN.md), so they keep attempt 1;
      // a queued retry's failure came from the attempt before the one it waits for.
      attempt: failed ? failedAttempt : running ? attempt : 1,
      input: rendered,
      warnings,
      logs: [],
      started_at: iso(started),
      duration_ms: duration,
    };
    if (failed) {
      step.error = plan.error ?? "failed";
      if (failedAttempt > 1) {
        step.previous_errors = Array.from({ length: failedAttempt - 1 }, (_, i) => ({
          attempt: i + 1,
          error: plan.error ?? "failed",
          at: iso(new Date(at.getTime() - (failedAttempt - 1 - i) * 60_000)),
        }));
      }
    } else if (!running) {
      step.output = outputFor(action.type, rendered, app, ids.eventId, index, started);
    }
    steps.push(step);
    clock += duration + 5;
  });
  return steps;
}

function stateFor(plan: RunPlan, steps: Step[], at: Date, now: Date, maxAttempts: number): SeedRunState {
  const attempt = plan.attempt ?? 1;
  const last = steps[steps.length - 1];
  const finishedAt = last ? new Date(new Date(last.started_at).getTime() + last.duration_ms) : new Date(at.getTime() + 200);
  const base: SeedRunState = {
    status: plan.status,
    attempt,
    maxAttempts,
    nextAttemptAt: null,
    lockedBy: null,
    lockedAt: null,
    claimToken: null,
    startedAt: iso(new Date(at.getTime() + 100)),
    finishedAt: iso(finishedAt),
    error: plan.error ?? null,
    steps,
    updatedAt: iso(finishedAt),
  };
  switch (plan.status) {
    case "queued":
      // A fresh run waits for nothing; a retry waits out its backoff (2 minutes after attempt 1).
      return attempt > 1
        ? { ...base, nextAttemptAt: iso(new Date(Math.max(now.getTime(), finishedAt.getTime()) + 2 * 60_000)), finishedAt: null }
        : { ...base, nextAttemptAt: iso(at), startedAt: null, finishedAt: null, error: null, steps: [], updatedAt: iso(at) };
    case "running":
      return { ...base, lockedBy: `worker-${hex(3)}`, lockedAt: base.startedAt, claimToken: randomBytes(12).toString("base64url"), finishedAt: null, error: null };
    case "succeeded":
    case "skipped":
      return { ...base, error: null };
    default:
      return base;
  }
}

async function main(): Promise<number> {
  const checkOnly = process.argv.includes("--check");
  const unknown = process.argv.slice(2).filter((a) => a !== "--check");
  if (unknown.length) {
    console.error(`seed: unknown argument(s): ${unknown.join(" ")} (use --check to validate only)`);
    return 2;
  }
  const app = createApp({ env: process.env });
  try {
    const all = fixtures(app.config.inboundDomain);
    const valid: { fixture: Fixture; definition: Definition }[] = [];
    let refused = 0;
    for (const f of all) {
      const checked = checkDefinition(f.definition);
      if (checked.ok) {
        console.log(`seed: ✓ ${f.source.padEnd(8)} "${f.name}"`);
        valid.push({ fixture: f, definition: checked.definition });
      } else {
        refused++;
        console.error(`seed: ✗ ${f.source.padEnd(8)} "${f.name}" refused by checkDefinition:`);
        for (const p of checked.problems) console.error(`        ${p.path || "(root)"}: ${p.message}`);
      }
    }
    if (checkOnly) return refused ? 1 : 0;

    const service = createAppletService(app);
    const now = app.clock.now();
    let applets = 0;
    let runs = 0;
    for (const { fixture: f, definition } of valid) {
      if (await app.store.applets.get(f.id)) {
        console.log(`seed: "${f.name}" exists already; left as it is`);
        continue;
      }
      try {
        await service.create({ id: f.id, name: f.name, enabled: f.enabled, definition: f.definition, createdAt: iso(new Date(now.getTime() - 4 * 86_400_000)) });
      } catch (err) {
        refused++;
        console.error(`seed: ✗ "${f.name}" refused on save: ${err instanceof Error ? err.message : String(err)}`);
        continue;
      }
      applets++;
      const maxAttempts = definition.retry?.max_attempts ?? 5;
      for (const [n, plan] of f.runs.entries()) {
        const at = new Date(now.getTime() - plan.hoursAgo * 3_600_000);
        const payload = f.payload(n, at);
        const ids = await app.store.runs.ingest({
          appletId: f.id,
          source: f.source,
          dedupeKey: f.dedupeKey(n, at, payload),
          payloadJson: JSON.stringify(payload),
          receivedAt: iso(at),
          maxAttempts,
        });
        if (!ids) throw new Error(`seed: event of "${f.name}" run ${n} was deduplicated; the seed's dedupe keys must be unique`);
        const steps = plan.status === "queued" && !plan.attempt ? [] : buildSteps(app, f, definition, plan, payload, ids, at);
        if (!(await app.store.seed.setRunState(ids.runId, stateFor(plan, steps, at, now, maxAttempts)))) throw new Error(`seed: run ${ids.runId} vanished`);
        runs++;
      }
      await app.store.seed.recountApplet(f.id);
    }
    console.log(`seed: ${applets} applet(s) and ${runs} run(s) written to ${app.config.databasePath}`);
    if (refused) {
      console.error(`seed: ${refused} of ${all.length} applet definitions were refused (see above); the rest were seeded`);
      return 1;
    }
    return 0;
  } finally {
    void app.close();
  }
}

process.exitCode = await main();
