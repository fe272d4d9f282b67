import { readFileSync } from "node:fs";
import type { Command } from "commander";
import { planImport, problemsByFile, readDir, writeDir, type ExportedApplet } from "./applets-dir";
import { CliError, EXIT, type Client } from "./client";
import { dryRunText } from "./dry-run";

/**
 * The CLI's commands, one function per group, each adding its subcommands to the program
 * cli/program.ts builds (which resolves the token and turns errors into exit codes).
 */

/** What the CLI reads and writes: given by cli/index.ts, and by the tests. */
export interface Io {
  out: (s: string) => void;
  err: (s: string) => void;
  stdin: () => Promise<string>;
  env: Record<string, string | undefined>;
  fetch?: typeof fetch;
  sleep?: (ms: number) => Promise<void>;
  /** Asks for the token without echo; only when a person is at a terminal. */
  promptSecret?: (question: string) => Promise<string>;
  /** The user's uid, to check that a token file is theirs (undefined on Windows). */
  uid?: number;
}

/** What every command needs: the io, the API client (once the token is resolved), and how to print. */
export interface CommandContext {
  io: Io;
  api: () => Client;
  /** Whether --json was given. */
  json: () => boolean;
  /** `data` as JSON with --json, else `text()`. */
  print: (data: unknown, text: () => string) => void;
}

type AppletSummary = { id: string; name: string; enabled: boolean; trigger_type: string; action_types: string[]; last_fired_at: string | null; run_count: number };
type RunRow = { id: string; applet_id: string; applet_name: string | null; status: string; attempt: number; max_attempts: number; error: string | null; created_at: string; finished_at: string | null; next_attempt_at: string | null };

const FINAL = new Set(["succeeded", "failed", "skipped", "dead"]);

/** `--payload`: a JSON object, or @file holding one. */
function parsePayload(value: string): Record<string, unknown> {
  let payload: unknown;
  try {
    payload = JSON.parse(value.startsWith("@") ? readFileSync(value.slice(1), "utf8") : value);
  } catch (err) {
    throw new CliError(`--payload is not JSON: ${(err as Error).message}`, EXIT.usage);
  }
  if (!payload || typeof payload !== "object" || Array.isArray(payload)) throw new CliError("--payload must be a JSON object, e.g. '{\"body\":{\"title\":\"hi\"}}'", EXIT.usage);
  return payload as Record<string, unknown>;
}

/** `whenthen applets …`: list, show, export, import, delete, enable, disable, test and dry-run. */
export function appletCommands(program: Command, { io, api, print }: CommandContext): void {
  const applets = program.command("applets").description("list, show, export, import, enable, disable and test applets");
  applets
    .command("list")
    .description("every applet")
    .action(async () => {
      const { applets: list } = await api().json<{ applets: AppletSummary[] }>("GET", "/api/applets");
      print(list, () => table(["ID", "NAME", "ON", "TRIGGER", "ACTIONS", "RUNS"], list.map((a) => [a.id, a.name, a.enabled ? "yes" : "no", a.trigger_type, a.action_types.join(","), String(a.run_count)])) || "no applets");
    });
  applets
    .command("show <id>")
    .description("one applet with its definition")
    .action(async (id: string) => {
      const { applet } = await api().json<{ applet: Record<string, unknown> }>("GET", `/api/applets/${encodeURIComponent(id)}`);
      print(applet, () => JSON.stringify(applet, null, 2));
    });
  applets
    .command("export [id]")
    .description("the applets as an import file (stdout), or one file per applet with --dir")
    .option("--dir <folder>", "write <id>.json per applet into this folder")
    .action(async (id: string | undefined, o: { dir?: string }) => {
      const list = await api().json<ExportedApplet[]>("GET", `/api/export${id ? `?applet_id=${encodeURIComponent(id)}` : ""}`);
      if (id && list.length === 0) throw new CliError(`no applet with id ${id}`, EXIT.refused);
      if (o.dir) {
        const files = writeDir(o.dir, list);
        print({ files }, () => `wrote ${files.length} file(s) to ${o.dir}`);
      } else io.out(JSON.stringify(list, null, 2));
    });
  applets
    .command("import [file]")
    .description("import an export file, or apply a folder of applet files with --dir (says what changed)")
    .option("--dir <folder>", "apply every *.json in this folder: new applets are created, changed ones replaced")
    .option("--overwrite", "with a file: replace applets whose id exists")
    .option("--dry-run", "with --dir: say what would change and change nothing")
    .action(async (file: string | undefined, o: { dir?: string; overwrite?: boolean; dryRun?: boolean }) => {
      if (!file === !o.dir) throw new CliError("give an export file or --dir <folder>, not both", EXIT.usage);
      if (file) {
        let items: unknown;
        try {
          items = JSON.parse(file === "-" ? await io.stdin() : readFileSync(file, "utf8"));
        } catch (err) {
          throw new CliError(`cannot read ${file}: ${(err as Error).message}`, EXIT.usage);
        }
        const result = await api().json<{ created: string[]; replaced: string[] }>("POST", `/api/import${o.overwrite ? "?overwrite=true" : ""}`, items);
        print(result, () => `created ${result.created.length}, replaced ${result.replaced.length}`);
        return;
      }
      const files = readDir(o.dir!);
      const current = await api().json<ExportedApplet[]>("GET", "/api/export");
      const plan = planImport(files, current);
      const send = files.filter((_, i) => plan[i]!.change !== "unchanged");
      const report = () => plan.map((c) => `${c.change.padEnd(9)} ${c.id}  ${c.name}  (${c.file})`).join("\n");
      if (o.dryRun || send.length === 0) {
        print({ plan, applied: false }, () => `${report()}\n${send.length ? `${send.length} to apply (dry run: nothing changed)` : "nothing to change"}`);
        return;
      }
      try {
        await api().json("POST", "/api/import?overwrite=true", send.map((f) => f.applet));
      } catch (err) {
        if (err instanceof CliError && err.problems.length) throw new CliError(`${err.problems.length} problem(s); nothing was imported`, err.exitCode, problemsByFile(err.problems, send));
        throw err;
      }
      print({ plan, applied: true }, () => `${report()}\napplied ${send.length}`);
    });
  applets
    .command("delete <id>")
    .description("delete an applet with its runs")
    .action(async (id: string) => {
      await api().json("DELETE", `/api/applets/${encodeURIComponent(id)}`);
      print({ deleted: id }, () => `${id} deleted`);
    });
  for (const verb of ["enable", "disable"] as const) {
    applets
      .command(`${verb} <id>`)
      .description(`${verb} an applet`)
      .action(async (id: string) => {
        const { applet } = await api().json<{ applet: AppletSummary }>("POST", `/api/applets/${encodeURIComponent(id)}/${verb}`);
        print(applet, () => `${applet.name}: ${applet.enabled ? "enabled" : "disabled"}`);
      });
  }
  applets
    .command("test <id>")
    .description("send a test event (the trigger's sample, or --payload) and print the run id")
    .option("--payload <json>", 'the event\'s payload as JSON, or @file: what the trigger gives, e.g. \'{"body":{"title":"hi"}}\' for a webhook')
    .action(async (id: string, o: { payload?: string }) => {
      const payload = o.payload !== undefined ? parsePayload(o.payload) : await triggerSample(id);
      // The request body is the payload itself, as the editor's "Send test event" sends it.
      const r = await api().json<{ run_id: string; event_id: string }>("POST", `/api/applets/${encodeURIComponent(id)}/test`, payload);
      print(r, () => r.run_id);
    });

  applets
    .command("dry-run <id>")
    .description("test without sending: run the applet on an event with every action recorded, nothing sent or written")
    .option("--payload <json>", "the event's payload as JSON, or @file")
    .option("--event <event_id>", "an event the applet received")
    .option("--sample", "the trigger's sample")
    .option("--fetch", "fetch the trigger now (a feed, a JSON poll) and use its first item")
    .action(async (id: string, o: { payload?: string; event?: string; sample?: boolean; fetch?: boolean }) => {
      const body: Record<string, unknown> = {};
      if (o.payload !== undefined) body.payload = parsePayload(o.payload);
      if (o.event !== undefined) body.event_id = o.event;
      if (o.sample) body.sample = true;
      if (o.fetch) body.fetch = true;
      if (Object.keys(body).length > 1) throw new CliError("give at most one of --payload, --event, --sample and --fetch", EXIT.usage);
      const r = await api().json<Parameters<typeof dryRunText>[0]>("POST", `/api/applets/${encodeURIComponent(id)}/dry-run`, body);
      print(r, () => dryRunText(r));
    });

  /** The built-in sample of the applet's trigger, as the editor offers it. */
  const triggerSample = async (id: string): Promise<Record<string, unknown>> => {
    const { applet } = await api().json<{ applet: AppletSummary }>("GET", `/api/applets/${encodeURIComponent(id)}`);
    const { triggers } = await api().json<{ triggers: { type: string; sample: Record<string, unknown> }[] }>("GET", "/api/meta");
    return triggers.find((t) => t.type === applet.trigger_type)?.sample ?? {};
  };
}

/** `whenthen runs …`: list, show, retry, replay and watch. */
export function runCommands(program: Command, { io, api, json, print }: CommandContext): void {
  const runs = program.command("runs").description("list, show, retry, replay and watch runs");
  runs
    .command("list")
    .description("the newest runs")
    .option("--applet <id>", "of one applet")
    .option("--status <status>", "queued, running, succeeded, failed, skipped or dead")
    .action(async (o: { applet?: string; status?: string }) => {
      const q = new URLSearchParams();
      if (o.applet) q.set("applet_id", o.applet);
      if (o.status) q.set("status", o.status);
      const page = await api().json<{ runs: RunRow[]; next_cursor: string | null }>("GET", `/api/runs${q.size ? `?${q}` : ""}`);
      print(page, () => table(["ID", "APPLET", "STATUS", "ATTEMPT", "CREATED", "ERROR"], page.runs.map((r) => [r.id, r.applet_name ?? r.applet_id, r.status, `${r.attempt}/${r.max_attempts}`, r.created_at, (r.error ?? "").slice(0, 60)])) || "no runs");
    });
  runs
    .command("show <id>")
    .description("one run with its steps and event")
    .action(async (id: string) => {
      const r = await api().json<{ run: RunRow & { steps: { kind: string; name: string; status: string; error?: string | null }[] } }>("GET", `/api/runs/${encodeURIComponent(id)}`);
      print(r, () => [`${r.run.id}  ${r.run.applet_name ?? r.run.applet_id}  ${r.run.status}  attempt ${r.run.attempt}/${r.run.max_attempts}`, ...(r.run.error ? [`error: ${r.run.error}`] : []), ...r.run.steps.map((s) => `  ${s.kind} ${s.name}: ${s.status}${s.error ? ` — ${s.error}` : ""}`)].join("\n"));
    });
  runs
    .command("retry <id>")
    .description("queue a failed or dead run again (--from: from that step, the steps before it kept)")
    .option("--from <step>", "the id of the step to run from; the steps before it keep their recorded outputs")
    .action(async (id: string, o: { from?: string }) => {
      if (o.from !== undefined) {
        const r = await api().json<{ run_id: string; attempt: number; kept: number; from_step: string }>("POST", `/api/runs/${encodeURIComponent(id)}/retry-from`, { step: o.from });
        print(r, () => `${r.run_id} queued from step ${r.from_step} (attempt ${r.attempt}; ${r.kept} earlier step${r.kept === 1 ? "" : "s"} kept)`);
        return;
      }
      const r = await api().json<{ run_id: string; attempt: number }>("POST", `/api/runs/${encodeURIComponent(id)}/retry`);
      print(r, () => `${r.run_id} queued (attempt ${r.attempt})`);
    });
  runs
    .command("replay <id>")
    .description("run a run's event again, as a new run")
    .action(async (id: string) => {
      const r = await api().json<{ run_id: string }>("POST", `/api/runs/${encodeURIComponent(id)}/replay`);
      print(r, () => r.run_id);
    });
  runs
    .command("watch <id>")
    .description("wait for a run to finish, printing each change; exits 0 if it succeeded or was skipped, 1 if it failed")
    .option("--timeout <seconds>", "give up after this long (exit 1)", "600")
    .action(async (id: string, o: { timeout: string }) => {
      const deadline = Date.now() + Number(o.timeout) * 1000;
      const sleep = io.sleep ?? ((ms: number) => new Promise((r) => setTimeout(r, ms)));
      let last = "";
      for (;;) {
        const { run } = await api().json<{ run: RunRow }>("GET", `/api/runs/${encodeURIComponent(id)}`);
        const line = `${run.status}${run.status === "retrying" && run.next_attempt_at ? ` (attempt ${run.attempt} of ${run.max_attempts} pending at ${run.next_attempt_at})` : ""}`;
        if (line !== last && !json()) io.out(line);
        last = line;
        if (FINAL.has(run.status)) {
          if (json()) io.out(JSON.stringify(run, null, 2));
          if (run.status === "failed" || run.status === "dead") throw new CliError(`run ${run.id} ${run.status}: ${run.error ?? "no error recorded"}`, EXIT.refused);
          return;
        }
        if (Date.now() > deadline) throw new CliError(`run ${id} is still ${run.status} after ${o.timeout} s`, EXIT.refused);
        await sleep(1000);
      }
    });
}

/** `whenthen secrets …`: set (from stdin), list and delete. */
export function secretCommands(program: Command, { io, api, print }: CommandContext): void {
  const secrets = program.command("secrets").description("set, list and delete secrets (values are never shown)");
  secrets
    .command("set <name>")
    .description("set a secret to the value read from stdin (never an argument: arguments show in ps and shell history)")
    .action(async (name: string) => {
      const raw = await io.stdin();
      // One trailing newline is the terminal's or echo's, not the value's.
      const value = raw.replace(/\r?\n$/, "");
      if (!value) throw new CliError("no value on stdin: pipe it in, e.g. `printf %s \"$TOKEN\" | whenthen secrets set NAME`", EXIT.usage);
      await api().json("POST", "/api/secrets", { name, value });
      print({ name }, () => `${name} set; use it as {{secrets.${name}}}`);
    });
  secrets
    .command("list")
    .description("secret names and when they were set")
    .action(async () => {
      const { secrets: list } = await api().json<{ secrets: { name: string; updated_at: string }[] }>("GET", "/api/secrets");
      print(list, () => table(["NAME", "SET"], list.map((s) => [s.name, s.updated_at])) || "no secrets");
    });
  secrets
    .command("delete <name>")
    .description("delete a secret")
    .action(async (name: string) => {
      await api().json("DELETE", `/api/secrets/${encodeURIComponent(name)}`);
      print({ deleted: name }, () => `${name} deleted`);
    });
}

function table(head: string[], rows: string[][]): string {
  if (!rows.length) return "";
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  return [head, ...rows].map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join("  ")).join("\n");
}
