/**
 * Demo data for a development database (`pnpm seed`): one applet of each trigger type with
 * realistic configs, the secrets they reference (placeholder values), and four runs per applet in
 * mixed states (succeeded, failed, skipped, dead, queued, running): 20 runs in all.
 *
 *   pnpm seed            validate, then seed DATA_DIR/app.db (or DATABASE_URL)
 *   pnpm seed --check    validate the five definitions only; write nothing
 *
 * Every definition is checked with checkDefinition first and each problem is printed with its
 * path. Applets whose definition is refused (a trigger or action plug-in not registered yet, a
 * config that no longer matches its schema) are left out, and the script exits 1 after seeding
 * the rest. Running it again on a seeded database changes nothing.
 *
 * The schedule, RSS and poll applets are created disabled: enabled, a running worker would start
 * polling outside URLs and posting to the placeholder webhooks. The webhook and email applets
 * only act on what is sent to them, so they are enabled. The queued and running runs are real
 * queue rows: a worker started on this database picks them up (running ones after the 10 minute
 * stale-lease rule) and their actions fail against the placeholder secrets.
 */
import { randomBytes, randomUUID } from "node:crypto";
import path from "node:path";
import { createApp, type App } from "../lib/app";
import { createAppletService } from "../lib/applets/service";
import type { SeedRunState } from "../lib/db/store";
import { checkDefinition, timezoneOf, type Definition } from "../lib/definition";
import type { RunStatus, Step } from "../lib/executor/types";
import { toText } from "../lib/core/text";
import { renderConfig } from "../lib/template";
import type { TriggerType } from "../lib/triggers";

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

const SECRETS: Record<string, string> = {
  SLACK_WEBHOOK: "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
  DISCORD_WEBHOOK: "https://discord.com/api/webhooks/000000000000000000/placeholder-token",
  GITHUB_WEBHOOK_SECRET: "seed-placeholder-github-secret",
  BOOKKEEPING_TOKEN: "seed-placeholder-bookkeeping-token",
};

const HEADLINES = [
  { title: "SQLite is not a toy database", author: "antonz", points: 412 },
  { title: "Show HN: I replaced my IFTTT applets with 200 lines of cron", author: "jkl", points: 233 },
  { title: "Ask HN: What do you self-host in 2026?", author: "throwaway42", points: 187 },
  { title: "The WAL file and you", author: "drh", points: 301 },
];

const COMMITS = [
  { ref: "refs/heads/main", message: "Fix checkout button on Safari 19", pusher: "dana" },
  { ref: "refs/heads/main", message: "Bump next to 16.4.6", pusher: "renovate[bot]" },
  { ref: "refs/heads/feature/pricing-page", message: "WIP pricing table", pusher: "omar" },
  { ref: "refs/heads/main", message: "Add status page link to footer", pusher: "dana" },
];

const PRICES = ["48750.12", "47990.55", "49310.00", "46820.73"];

const iso = (d: Date) => d.toISOString();
const hex = (bytes: number) => randomBytes(bytes).toString("hex");

function fixtures(inboundDomain: string): Fixture[] {
  return [
    {
      id: "5eed0000-0000-4000-8000-000000000001",
      name: "GitHub pushes to main → Slack",
      enabled: true,
      source: "webhook",
      definition: {
        version: 1,
        trigger: { type: "webhook", config: { secret_header: "X-Hub-Signature-256", hmac_secret: "{{secrets.GITHUB_WEBHOOK_SECRET}}" } },
        filter: {
          code: "if (trigger.body.ref !== 'refs/heads/main') skip('not main: ' + trigger.body.ref);\nset('short', trigger.body.head_commit.id.slice(0, 7));",
        },
        actions: [
          {
            type: "slack",
            config: {
              webhook_url: "{{secrets.SLACK_WEBHOOK}}",
              text: "{{trigger.body.pusher.name}} pushed to {{trigger.body.repository.full_name}}: {{trigger.body.head_commit.message | truncate:120}} ({{vars.short}}) {{trigger.body.head_commit.url}}",
            },
          },
        ],
        retry: { max_attempts: 5 },
      },
      payload: (n, at) => {
        const c = COMMITS[n % COMMITS.length]!;
        const id = hex(20);
        return {
          body: {
            ref: c.ref,
            repository: { full_name: "acme/website", html_url: "https://github.com/acme/website" },
            pusher: { name: c.pusher },
            head_commit: { id, message: c.message, url: `https://github.com/acme/website/commit/${id}`, timestamp: iso(at) },
          },
          headers: { "content-type": "application/json", "user-agent": "GitHub-Hookshot/8e1f2a0", "x-github-event": "push", "x-github-delivery": randomUUID() },
          query: {},
          method: "POST",
          received_at: iso(at),
        };
      },
      dedupeKey: () => null,
      runs: [
        { status: "succeeded", hoursAgo: 2 },
        { status: "skipped", hoursAgo: 9, skipReason: "not main: refs/heads/feature/pricing-page" },
        { status: "succeeded", hoursAgo: 20 },
        { status: "failed", hoursAgo: 49, failAt: 0, error: "slack: Slack answered 404 no_service (the webhook was removed or the URL is wrong)" },
      ],
    },
    {
      id: "5eed0000-0000-4000-8000-000000000002",
      name: "Weekday standup reminder",
      enabled: true,
      source: "schedule",
      definition: {
        version: 1,
        trigger: { type: "schedule", config: { cron: "30 8 * * 1-5", timezone: "Europe/Berlin" } },
        actions: [
          {
            type: "email",
            config: {
              to: "me@example.com",
              subject: "Standup in 30 minutes ({{trigger.weekday}} {{trigger.date}})",
              body_markdown: "Good morning!\n\n- What did I finish yesterday?\n- What is today's one thing?\n- Anything blocking?\n\n_Sent by whenthen at {{trigger.time}} {{trigger.timezone}}._",
            },
          },
        ],
      },
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
    {
      id: "5eed0000-0000-4000-8000-000000000003",
      name: "Hacker News front page → reading notes + Discord",
      enabled: false,
      source: "rss",
      definition: {
        version: 1,
        trigger: { type: "rss", config: { url: "https://hnrss.org/frontpage", interval_min: 15, fire_on_first_poll: false, max_items_per_poll: 20 } },
        filter: { code: "if (/^(Ask|Tell) HN/.test(trigger.title)) skip('discussion thread');" },
        actions: [
          {
            type: "note",
            config: {
              folder: "reading/hn",
              filename: "{{trigger.published_at | date:'yyyy-MM-dd'}}-{{trigger.title | slug}}.md",
              content: "# {{trigger.title}}\n\n{{trigger.link}}\n\n{{trigger.summary}}\n",
              mode: "create",
            },
          },
          { type: "discord", config: { webhook_url: "{{secrets.DISCORD_WEBHOOK}}", content: "📰 {{trigger.title}}\n{{trigger.link}}" } },
        ],
      },
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
        { status: "running", hoursAgo: 0.01, runningAt: 1 },
        { status: "skipped", hoursAgo: 5, skipReason: "discussion thread" },
        { status: "dead", hoursAgo: 30, attempt: 5, failAt: 1, error: "discord: Discord answered 502 Bad Gateway" },
        { status: "succeeded", hoursAgo: 55 },
      ],
    },
    {
      id: "5eed0000-0000-4000-8000-000000000004",
      name: "Stripe receipts → bookkeeping",
      enabled: true,
      source: "email",
      definition: {
        version: 1,
        trigger: { type: "email", config: { to_alias: "invoices", from_contains: "@stripe.com", subject_regex: "^(Your receipt|Invoice)" } },
        actions: [
          {
            type: "note",
            config: { folder: "finance", filename: "receipts.md", content: "- {{trigger.date | date:'yyyy-MM-dd'}} {{trigger.from_name}}: {{trigger.subject}}\n", mode: "append" },
          },
          {
            type: "http",
            config: {
              url: "https://books.example.com/api/receipts",
              method: "POST",
              headers: { Authorization: "Bearer {{secrets.BOOKKEEPING_TOKEN}}" },
              body: '{"from": {{trigger.from | json}}, "subject": {{trigger.subject | json}}, "message_id": {{trigger.message_id | json}}}',
              content_type: "application/json",
            },
          },
        ],
      },
      payload: (n, at) => {
        const number = `${1040 + n}-${2231 + n * 17}`;
        const text = `Receipt from Fly-by-Night Hosting\nAmount paid: $${(12 + n * 3).toFixed(2)}\nReceipt #${number}\n`;
        return {
          from: "receipts+acct_1Nx@stripe.com",
          from_name: "Fly-by-Night Hosting",
          to: [`invoices@${inboundDomain}`],
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
        { status: "queued", hoursAgo: 0.2, attempt: 2, failAt: 1, error: "http: POST https://books.example.com/api/receipts answered 503 Service Unavailable" },
        { status: "succeeded", hoursAgo: 26 },
        { status: "failed", hoursAgo: 50, failAt: 1, error: "http: POST https://books.example.com/api/receipts answered 422 Unprocessable Entity" },
        { status: "succeeded", hoursAgo: 70 },
      ],
    },
    {
      id: "5eed0000-0000-4000-8000-000000000005",
      name: "BTC under $50k → Discord + price log",
      enabled: false,
      source: "poll",
      definition: {
        version: 1,
        trigger: {
          type: "poll",
          config: {
            url: "https://api.coinbase.com/v2/prices/BTC-USD/spot",
            method: "GET",
            headers: { Accept: "application/json" },
            interval_min: 5,
            path: "data.amount",
            condition: "lt",
            target: 50000,
          },
        },
        actions: [
          { type: "discord", config: { webhook_url: "{{secrets.DISCORD_WEBHOOK}}", content: "BTC is at ${{trigger.value}} (was ${{trigger.previous_value}}), under $50,000." } },
          {
            type: "http",
            config: {
              url: "https://sheets-proxy.example.com/append",
              method: "POST",
              headers: {},
              body: '{"at": {{trigger.changed_at | json}}, "price": {{trigger.value | json}}}',
              content_type: "application/json",
            },
          },
        ],
      },
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
        { status: "failed", hoursAgo: 36, failAt: 1, error: "http: POST https://sheets-proxy.example.com/append answered 401 Unauthorized" },
        { status: "dead", hoursAgo: 60, attempt: 5, failAt: 0, error: "discord: Discord answered 429 Too Many Requests (retry_after 12 s)" },
      ],
    },
  ];
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
  if (definition.filter) {
    const skipped = plan.status === "skipped";
    const body = payload.body as { head_commit?: { id?: string } } | undefined;
    if (!skipped && body?.head_commit?.id) vars.short = body.head_commit.id.slice(0, 7);
    steps.push({
      kind: "filter",
      name: "filter",
      status: skipped ? "skipped" : "succeeded",
      attempt,
      input: { code: definition.filter.code },
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
  definition.actions.forEach((action, index) => {
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
    for (const [name, value] of Object.entries(SECRETS)) {
      if (!(await app.store.secrets.getEncrypted(name))) await app.secrets.set(name, value);
    }
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
