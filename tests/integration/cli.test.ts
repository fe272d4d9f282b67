import { execFile, fork, type ChildProcess } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { main } from "@/cli/program";

/**
 * The CLI as a script runs it — a subprocess (`node --import tsx cli/index.ts`, what `pnpm
 * whenthen` runs) against a real web process, authenticated with an API token made in a session.
 */
let web: ChildProcess;
let base: string;
let token: string;
let readOnlyToken: string;
const dataDir = mkdtempSync(path.join(os.tmpdir(), "whenthen-cli-"));
const work = mkdtempSync(path.join(os.tmpdir(), "whenthen-cli-files-"));

const home = mkdtempSync(path.join(os.tmpdir(), "whenthen-cli-home-"));

/** The CLI as a script runs it; `env` adds to (or, with undefined, removes from) what it gets. HOME is a fresh folder. */
function cli(args: string[], opts: { token?: string; stdin?: string; env?: Record<string, string | undefined> } = {}): Promise<{ code: number; out: string; err: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, XDG_CONFIG_HOME: "", WHENTHEN_URL: base, WHENTHEN_TOKEN: opts.token ?? token, ...opts.env };
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
  return new Promise((resolve) => {
    const child = execFile(process.execPath, ["--import", "tsx", "cli/index.ts", ...args], { env, timeout: 30_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, out: stdout, err: stderr }),
    );
    child.stdin!.end(opts.stdin ?? "");
  });
}

beforeAll(async () => {
  web = fork(path.resolve("tests/helpers/web-process.ts"), [], {
    env: { ...process.env, DATA_DIR: dataDir, PUBLIC_URL: "http://localhost:3000", LOG_LEVEL: "error" },
    execArgv: ["--import", "tsx"],
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const port = await new Promise<number>((resolve, reject) => {
    web.once("message", (m) => resolve((m as { port: number }).port));
    web.once("exit", (code) => reject(new Error(`web process exited with ${code}`)));
  });
  base = `http://127.0.0.1:${port}`;
  const setup = await fetch(`${base}/api/setup`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email: "me@example.com", password: "correct horse battery" }) });
  const cookie = (setup.headers.get("set-cookie") ?? "").split(";")[0]!;
  const make = async (body: unknown) => ((await (await fetch(`${base}/api/tokens`, { method: "POST", headers: { "content-type": "application/json", cookie }, body: JSON.stringify(body) })).json()) as { token: string }).token;
  token = await make({ name: "cli test" });
  readOnlyToken = await make({ name: "read only", read_only: true });
  for (const name of ["Orders to Slack", "Nightly report"]) {
    const res = await fetch(`${base}/api/applets`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body: JSON.stringify({ name, definition: { version: 1, trigger: { type: "webhook", config: {} }, actions: [{ type: "note", config: { filename: "cli.md", content: "{{trigger.body.title}}" } }] } }),
    });
    expect(res.status).toBe(201);
  }
}, 60_000);

afterAll(async () => {
  web.kill("SIGTERM");
  await new Promise((r) => web.once("exit", r));
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(work, { recursive: true, force: true });
  rmSync(home, { recursive: true, force: true });
});

describe("the whenthen CLI against a real server", () => {
  it("export --dir → delete → import --dir gives back the same ids, and says what changed", async () => {
    const list = await cli(["--json", "applets", "list"]);
    expect(list.code).toBe(0);
    const before = (JSON.parse(list.out) as { id: string; name: string }[]).map((a) => a.id).sort();
    expect(before).toHaveLength(2);
    const dir = path.join(work, "applets");
    const exported = await cli(["applets", "export", "--dir", dir]);
    expect(exported.code, exported.err).toBe(0);
    expect(readdirSync(dir).sort()).toEqual(before.map((id) => `${id}.json`));

    for (const id of before) expect((await cli(["applets", "delete", id])).code).toBe(0);
    expect(JSON.parse((await cli(["--json", "applets", "list"])).out)).toEqual([]);

    const dry = await cli(["applets", "import", "--dir", dir, "--dry-run"]);
    expect(dry.code).toBe(0);
    expect(dry.out).toMatch(/^new\s/m);
    expect(JSON.parse((await cli(["--json", "applets", "list"])).out)).toEqual([]);

    const applied = await cli(["applets", "import", "--dir", dir]);
    expect(applied.code, applied.err).toBe(0);
    expect(applied.out.match(/^new\s/gm)).toHaveLength(2);
    const after = (JSON.parse((await cli(["--json", "applets", "list"])).out) as { id: string }[]).map((a) => a.id).sort();
    expect(after).toEqual(before);

    // Edit one file: only it is applied; the other is unchanged.
    const file = path.join(dir, `${before[0]}.json`);
    const edited = JSON.parse(readFileSync(file, "utf8")) as { name: string };
    edited.name = "Renamed in git";
    writeFileSync(file, JSON.stringify(edited));
    const again = await cli(["applets", "import", "--dir", dir]);
    expect(again.out).toMatch(new RegExp(`^changed\\s+${before[0]}`, "m"));
    expect(again.out).toMatch(new RegExp(`^unchanged\\s+${before[1]}`, "m"));
    const shown = JSON.parse((await cli(["--json", "applets", "show", before[0]!])).out) as { name: string };
    expect(shown.name).toBe("Renamed in git");
  }, 120_000);

  it("an invalid folder lists every problem with its file and changes nothing", async () => {
    const dir = path.join(work, "bad");
    const exported = await cli(["applets", "export", "--dir", dir]);
    expect(exported.code).toBe(0);
    const [first, second] = readdirSync(dir).sort();
    const a = JSON.parse(readFileSync(path.join(dir, first!), "utf8")) as { name: string; definition: { trigger: { type: string } } };
    a.name = "Should not land";
    a.definition.trigger.type = "carrier-pigeon";
    writeFileSync(path.join(dir, first!), JSON.stringify(a));
    const b = JSON.parse(readFileSync(path.join(dir, second!), "utf8")) as { name: string };
    b.name = "";
    writeFileSync(path.join(dir, second!), JSON.stringify(b));
    const before = (await cli(["--json", "applets", "list"])).out;
    const res = await cli(["applets", "import", "--dir", dir]);
    expect(res.code).toBe(1);
    expect(res.err).toContain(path.join(dir, first!));
    expect(res.err).toContain(path.join(dir, second!));
    expect(res.err).toMatch(/definition\.trigger\.type: unknown type/);
    expect(res.err).toMatch(/name: required/);
    expect((await cli(["--json", "applets", "list"])).out).toBe(before);
  }, 60_000);

  it("secrets take their value from stdin, never an argument; the value is never printed", async () => {
    const set = await cli(["secrets", "set", "CLI_TOKEN"], { stdin: "s3cr3t-from-stdin\n" });
    expect(set.code, set.err).toBe(0);
    const list = await cli(["secrets", "list"]);
    expect(list.out).toContain("CLI_TOKEN");
    expect(list.out + set.out).not.toContain("s3cr3t-from-stdin");
    expect((await cli(["secrets", "set", "EMPTY"], { stdin: "" })).code).toBe(2);
    expect((await cli(["secrets", "delete", "CLI_TOKEN"])).code).toBe(0);
    expect((await cli(["secrets", "delete", "CLI_TOKEN"])).code).toBe(1);
  }, 60_000);

  it("a test event's run can be watched to its end; runs list and show read it back", async () => {
    const id = (JSON.parse((await cli(["--json", "applets", "list"])).out) as { id: string }[])[0]!.id;
    const test = await cli(["applets", "test", id, "--payload", JSON.stringify({ body: { title: "from the CLI" } })]);
    expect(test.code, test.err).toBe(0);
    const runId = test.out.trim();
    // No worker runs in this test: the run stays queued, and watch gives up with exit 1.
    const watch = await cli(["runs", "watch", runId, "--timeout", "1"]);
    expect(watch.code).toBe(1);
    expect(watch.out).toContain("queued");
    expect(watch.err).toMatch(/still queued/);
    const runs = JSON.parse((await cli(["--json", "runs", "list", "--applet", id])).out) as { runs: { id: string }[] };
    expect(runs.runs.map((r) => r.id)).toContain(runId);
    expect((await cli(["runs", "show", runId])).out).toContain(runId);
    expect((await cli(["runs", "show", "no-such-run"])).code).toBe(1);
  }, 60_000);

  it("applets test --payload, as the README shows, stores that payload as the event: trigger.body is the body, also in the sample picker", async () => {
    const id = (JSON.parse((await cli(["--json", "applets", "list"])).out) as { id: string }[])[1]!.id;
    const test = await cli(["--json", "applets", "test", id, "--payload", '{"body":{"title":"hi"}}']);
    expect(test.code, test.err).toBe(0);
    const { event_id } = JSON.parse(test.out) as { event_id: string };
    const events = async () => ((await (await fetch(`${base}/api/applets/${id}/events`, { headers: { authorization: `Bearer ${token}` } })).json()) as { events: { id: string; payload: unknown }[] }).events;
    expect((await events()).find((e) => e.id === event_id)?.payload).toEqual({ body: { title: "hi" } });

    // Without --payload the event is the trigger's built-in sample, as "Send test event" sends it.
    const sampled = await cli(["--json", "applets", "test", id]);
    expect(sampled.code, sampled.err).toBe(0);
    const meta = (await (await fetch(`${base}/api/meta`, { headers: { authorization: `Bearer ${token}` } })).json()) as { triggers: { type: string; sample: unknown }[] };
    const webhookSample = meta.triggers.find((t) => t.type === "webhook")!.sample;
    expect((await events()).find((e) => e.id === (JSON.parse(sampled.out) as { event_id: string }).event_id)?.payload).toEqual(webhookSample);

    const notObject = await cli(["applets", "test", id, "--payload", "[1,2]"]);
    expect(notObject.code).toBe(2);
    expect(notObject.err).toMatch(/--payload must be a JSON object/);
  }, 60_000);

  it("exit codes a script can use: a bad token 3, a read-only token writing 3, no server 4, bad usage 2", async () => {
    const bad = await cli(["applets", "list"], { token: `wt_${"x".repeat(43)}` });
    expect(bad.code).toBe(3);
    expect(bad.err).toMatch(/refused the token/);
    expect((await cli(["applets", "list"], { token: readOnlyToken })).code).toBe(0);
    const write = await cli(["secrets", "set", "NOPE"], { token: readOnlyToken, stdin: "x" });
    expect(write.code).toBe(3);
    expect(write.err).toMatch(/read-only/);
    const down = await new Promise<{ code: number; err: string }>((resolve) => {
      execFile(process.execPath, ["--import", "tsx", "cli/index.ts", "applets", "list"], { env: { ...process.env, WHENTHEN_URL: "http://127.0.0.1:9", WHENTHEN_TOKEN: token } }, (error, _o, err) => resolve({ code: (error as { code?: number } | null)?.code ?? 0, err }));
    });
    expect(down.code).toBe(4);
    expect(down.err).toMatch(/cannot reach/);
    expect((await cli(["applets", "frobnicate"])).code).toBe(2);
  }, 60_000);

  it("applets dry-run prints the request and the note it would make, and writes nothing; runs retry --from names the steps that ran", async () => {
    const res = await fetch(`${base}/api/applets`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body: JSON.stringify({
        name: "Dry",
        definition: {
          version: 2,
          trigger: { type: "webhook", config: {} },
          steps: [
            { id: "post", type: "http", config: { url: "https://api.example.com/orders", method: "POST", headers: { authorization: "Bearer abc-secret-value" }, body: { title: "{{trigger.body.title}}" } } },
            { id: "jot", type: "note", config: { filename: "dry-{{trigger.body.title}}.md", content: "# {{trigger.body.title}}" } },
          ],
        },
      }),
    });
    const { applet } = (await res.json()) as { applet: { id: string } };
    const dry = await cli(["applets", "dry-run", applet.id, "--payload", '{"body":{"title":"Lamp"}}']);
    expect(dry.code, dry.err).toBe(0);
    expect(dry.out).toMatch(/would end succeeded; nothing was sent or written/);
    expect(dry.out).toContain("  POST https://api.example.com/orders");
    expect(dry.out).toContain("    authorization: [redacted]");
    expect(dry.out).toContain('    {"title":"Lamp"}');
    expect(dry.out).toMatch(/jot \(note\) succeeded: would create dry-Lamp\.md/);
    expect(dry.out).not.toContain("abc-secret-value");
    expect(existsSync(path.join(dataDir, "notes", "dry-Lamp.md"))).toBe(false);
    expect((await cli(["applets", "dry-run", applet.id, "--sample", "--payload", "{}"])).code).toBe(2);

    const missing = await cli(["runs", "retry", "no-such-run", "--from", "post"]);
    expect(missing.code).toBe(1);
  }, 60_000);
});

describe("the CLI's token never comes from the command line", () => {
  const tokenFile = (name: string, mode: number, content = `${token}\n`) => {
    const file = path.join(work, name);
    writeFileSync(file, content);
    chmodSync(file, mode);
    return file;
  };

  it("--token is refused with the reason and what to do instead, even beside a good WHENTHEN_TOKEN", async () => {
    for (const args of [["--token", token, "applets", "list"], [`--token=${token}`, "applets", "list"], ["applets", "list", "--token", token]]) {
      const r = await cli(args, { env: { WHENTHEN_TOKEN: undefined } });
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.err).toMatch(/--token is not accepted: a token on the command line is visible to every user of this machine \(ps\) and stays in your shell history/);
      expect(r.err).toMatch(/revoke it in Settings → API tokens/);
      expect(r.out).toBe("");
    }
    // Refused even beside a good WHENTHEN_TOKEN: the one on the command line is the exposed one.
    expect((await cli(["--token", token, "applets", "list"])).code).toBe(2);
  }, 60_000);

  it("a token file readable by its owner only is read (--token-file, WHENTHEN_TOKEN_FILE, ~/.config/whenthen/token); a looser one is refused with the chmod to run", async () => {
    const own = tokenFile("token-0600", 0o600);
    const flag = await cli(["--json", "applets", "list", "--token-file", own], { env: { WHENTHEN_TOKEN: undefined } });
    expect(flag.code, flag.err).toBe(0);
    expect(JSON.parse(flag.out)).toEqual(expect.any(Array));
    expect((await cli(["applets", "list"], { env: { WHENTHEN_TOKEN: undefined, WHENTHEN_TOKEN_FILE: tokenFile("token-0400", 0o400) } })).code).toBe(0);
    for (const mode of [0o644, 0o640, 0o604, 0o660]) {
      const loose = tokenFile(`token-${mode.toString(8)}`, mode);
      const r = await cli(["applets", "list", "--token-file", loose], { env: { WHENTHEN_TOKEN: undefined } });
      expect(r.code, mode.toString(8)).toBe(3);
      expect(r.err).toContain(`refusing to read the token from ${loose}: its permissions are 0${mode.toString(8)}, so other users of this machine can read it too; run chmod 600 ${loose}`);
    }
    const missing = await cli(["applets", "list", "--token-file", path.join(work, "nope")], { env: { WHENTHEN_TOKEN: undefined } });
    expect(missing.code).toBe(3);
    expect(missing.err).toMatch(/no such file/);
    // The default file, when there is one.
    mkdirSync(path.join(home, ".config", "whenthen"), { recursive: true });
    const fallback = path.join(home, ".config", "whenthen", "token");
    writeFileSync(fallback, token);
    chmodSync(fallback, 0o644);
    expect((await cli(["applets", "list"], { env: { WHENTHEN_TOKEN: undefined } })).err).toMatch(/its permissions are 0644/);
    chmodSync(fallback, 0o600);
    expect((await cli(["applets", "list"], { env: { WHENTHEN_TOKEN: undefined } })).code).toBe(0);
    rmSync(fallback);
  }, 60_000);

  it("with no token anywhere and no terminal it says every place a token can come from; at a terminal it asks, without echo", async () => {
    const none = await cli(["applets", "list"], { env: { WHENTHEN_TOKEN: undefined } });
    expect(none.code).toBe(3);
    expect(none.err).toMatch(/no API token: set WHENTHEN_TOKEN, name a file only you can read with --token-file or WHENTHEN_TOKEN_FILE, put it in .*\.config\/whenthen\/token, or run the command in a terminal/);
    const asked: string[] = [];
    const out: string[] = [];
    const code = await main(["--json", "applets", "list"], {
      out: (t) => out.push(t),
      err: (t) => out.push(t),
      stdin: async () => "",
      env: { WHENTHEN_URL: base, HOME: home },
      promptSecret: async (question) => {
        asked.push(question);
        return `${token}\n`;
      },
      uid: process.getuid?.(),
    });
    expect(code, out.join("\n")).toBe(0);
    expect(asked).toEqual([`API token for ${base} (Settings → API tokens; not shown as you type): `]);
    expect(JSON.parse(out.join(""))).toEqual(expect.any(Array));
  }, 60_000);
});
