/**
 * Issue 19's dedupe key, in the store alone: CPU per 1,000 webhooks through `runs.ingestMany`
 * (group commit, batches of 50 as 50 connections give them) on a real SQLite file that already holds
 * PRE events, with
 *  - no dedupe key (the unsigned webhook),
 *  - a unique random key per request (X-GitHub-Delivery is a GUID; Stripe, Svix ids likewise),
 *  - a unique key that grows with time (a counter prefix),
 *  - the random key with the unique index dropped (what the index itself costs).
 * CPU time of this process, not wall time: the figure for a machine shared with other work.
 * The variants alternate for ROUNDS rounds; each figure is the median.
 */
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Store } from "@/lib/db/store";
import { alertPolicy } from "@/lib/alerts/policy";
import { openSqliteStore, sqliteOf } from "@/lib/db/store/sqlite";
import type { BenchFigure } from "./types";

const ROWS = Number(process.env.BENCH_DEDUPE_ROWS ?? 30_000);
const PRE = Number(process.env.BENCH_DEDUPE_PRE ?? 60_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const BATCH = 50;
const APPLETS = 20;

type Variant = "none" | "random" | "sequential" | "random, no index";
const VARIANTS: Variant[] = ["none", "random", "sequential", "random, no index"];

function keyOf(v: Variant, n: number): string | null {
  if (v === "none") return null;
  if (v === "sequential") return `${String(n).padStart(12, "0")}-${randomUUID()}`;
  return randomUUID();
}

async function fill(store: Store, v: Variant, from: number, rows: number): Promise<number> {
  const headers = { "content-type": "application/json", "user-agent": "bench", "x-hub-signature-256": `sha256=${"a".repeat(64)}` };
  const cpu = process.cpuUsage();
  for (let n = from; n < from + rows; ) {
    const items = [];
    for (let j = 0; j < BATCH; j++, n++) {
      const key = keyOf(v, n);
      const receivedAt = new Date().toISOString();
      // The same payload shape (and size) in every variant: the delivery header is always there.
      const payload = { body: { title: "Order #1042 paid", amount: 59.9, n: 1 }, headers: { ...headers, "x-github-delivery": key ?? randomUUID() }, query: {}, method: "POST", received_at: receivedAt };
      items.push({ appletId: `a${n % APPLETS}`, source: "webhook", dedupeKey: key, payloadJson: JSON.stringify(payload), receivedAt, maxAttempts: 5 });
    }
    await store.runs.ingestMany(items);
  }
  const used = process.cpuUsage(cpu);
  return (used.user + used.system) / 1000 / (rows / 1000);
}

export default async function bench(): Promise<BenchFigure[]> {
  const results = new Map<Variant, number[]>(VARIANTS.map((v) => [v, []]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const v of VARIANTS) {
      const dir = mkdtempSync(path.join(os.tmpdir(), "whenthen-bench-dedupe-"));
      const store = openSqliteStore({ file: path.join(dir, "app.db"), alertPolicy });
      try {
        if (v === "random, no index") sqliteOf(store).exec("DROP INDEX events_applet_dedupe_idx");
        for (let i = 0; i < APPLETS; i++) await store.applets.insert({ id: `a${i}`, name: `a${i}`, enabled: true, triggerType: "webhook", definition: { version: 1 }, webhookToken: `token-${i}`, now: new Date().toISOString() });
        await fill(store, v, 0, PRE);
        results.get(v)!.push(await fill(store, v, PRE, ROWS));
      } finally {
        await store.close();
        rmSync(dir, { recursive: true, force: true });
      }
    }
  }
  const median = (v: Variant) => {
    const xs = [...results.get(v)!].sort((a, b) => a - b);
    return xs[Math.floor(xs.length / 2)]!;
  };
  const none = median("none");
  return VARIANTS.map((v) => ({
    name: `store ingest, dedupe key: ${v} (${ROWS.toLocaleString("en-US")} webhooks after ${PRE.toLocaleString("en-US")}, batches of ${BATCH})`,
    unit: "ms CPU / 1,000",
    value: median(v),
    notes: `${v === "none" ? "" : `${Math.round((median(v) / none) * 100)} % of no key; `}rounds ${results.get(v)!.map((x) => x.toFixed(1)).join(", ")}`,
  }));
}
