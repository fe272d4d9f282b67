import { existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeEach, describe, expect, test } from "vitest";
import { noteAction, noteConfigSchema } from "@/lib/actions/note";
import { sanitizeFilename } from "@/lib/files/sanitize";
import { createActionContext, makeTempDir, removeTempDirs, type TestActionContext, failure } from "../helpers/action-context";

afterAll(removeTempDirs);

let notesRoot: string;
let outside: string;
let ctx: TestActionContext;

beforeEach(() => {
  const dataDir = makeTempDir("whenthen-notes-");
  notesRoot = path.join(dataDir, "notes");
  // A folder next to the root that nothing may ever write into.
  outside = makeTempDir("whenthen-outside-");
  ctx = createActionContext({ env: { DATA_DIR: dataDir, NOTES_ROOT: notesRoot } });
});

const write = (config: Record<string, unknown>, context = ctx) => noteAction.run(noteConfigSchema.parse(config), context);

/** Every file (not folder) under `dir`, relative, sorted. */
function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => !e.isDirectory())
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)))
    .sort();
}

const pathOf = (output: unknown) => (output as { path: string }).path;

describe("note action", () => {
  test("AC11: writes the file under NOTES_ROOT and returns its absolute path", async () => {
    const result = await write({ folder: "journal/2026", filename: "today.md", content: "# Today\n" });
    const written = pathOf(result.output);
    expect(path.isAbsolute(written)).toBe(true);
    expect(path.relative(notesRoot, written)).toBe(path.join("journal", "2026", "today.md"));
    expect(readFileSync(written, "utf8")).toBe("# Today\n");
    expect(filesUnder(notesRoot)).toEqual([path.join("journal", "2026", "today.md")]);
  });

  test("AC11: a name collision in create mode gives ' (2)', then ' (3)', before the extension", async () => {
    const one = pathOf((await write({ filename: "idea.md", content: "first" })).output);
    const two = pathOf((await write({ filename: "idea.md", content: "second" })).output);
    const three = pathOf((await write({ filename: "idea.md", content: "third" })).output);
    expect([one, two, three].map((p) => path.basename(p))).toEqual(["idea.md", "idea (2).md", "idea (3).md"]);
    expect(readFileSync(one, "utf8")).toBe("first");
    expect(readFileSync(two, "utf8")).toBe("second");
    expect(readFileSync(three, "utf8")).toBe("third");
  });

  test("create mode: a name with hundreds of copies gets the next after the highest, from one read of the folder (each new copy tried every number taken, 60-100 ms by the 500th); past the last number the error says what to do", async () => {
    mkdirSync(notesRoot, { recursive: true });
    writeFileSync(path.join(notesRoot, "digest.md"), "0");
    for (let n = 2; n <= 600; n++) writeFileSync(path.join(notesRoot, `digest (${n}).md`), String(n));
    // A gap left by a deleted copy is not refilled: the copies stay in the order they were made.
    rmSync(path.join(notesRoot, "digest (300).md"));
    // Names that only look alike are not copies of this one.
    for (const other of ["digest (9999).txt", "digest (x).md", "digest(700).md", "my digest (800).md", "digest (0700).md"]) writeFileSync(path.join(notesRoot, other), "");
    const next = pathOf((await write({ filename: "digest.md", content: "new" })).output);
    expect(path.basename(next)).toBe("digest (601).md");
    expect(readFileSync(next, "utf8")).toBe("new");
    expect(existsSync(path.join(notesRoot, "digest (300).md"))).toBe(false);
    // Without an extension too.
    writeFileSync(path.join(notesRoot, "plain"), "");
    writeFileSync(path.join(notesRoot, "plain (41)"), "");
    expect(path.basename(pathOf((await write({ filename: "plain", content: "x" })).output))).toBe("plain (42)");

    writeFileSync(path.join(notesRoot, "full.md"), "");
    writeFileSync(path.join(notesRoot, "full (100000).md"), "");
    const refused = await failure(write({ filename: "full.md", content: "x" }));
    expect(refused.retryable).toBe(false);
    expect(refused.message).toMatch(/already has numbered copies up to \(100000\).*use another name or append mode/);
  });

  test("AC11: concurrent writes of one name each get their own file", async () => {
    const results = await Promise.all(Array.from({ length: 5 }, (_, i) => write({ filename: "same.md", content: String(i) })));
    expect(new Set(results.map((r) => pathOf(r.output))).size).toBe(5);
    expect(filesUnder(notesRoot)).toHaveLength(5);
  });

  const hostile = [
    "../escape.md",
    "/etc/passwd",
    "a\u0000b.md",
    "..\\..\\x.md",
    "....//....//x.md",
    "%2e%2e%2fx.md",
    "%252e%252e%252fx.md",
    "．．／x.md",
    "C:\\Windows\\x.md",
    "C:x.md",
    "\\\\srv\\share\\x.md",
    "//srv/share/x.md",
    "..",
    ".",
  ];

  for (const bad of hostile) {
    test(`AC11: filename ${JSON.stringify(bad)} is refused, non-retryable, naming the value, and nothing is written`, async () => {
      const err = await failure(write({ filename: bad, content: "pwned" }));
      expect(err.retryable).toBe(false);
      expect(err.message).toContain(`note: "filename" ${JSON.stringify(bad)}`);
      expect(filesUnder(notesRoot)).toEqual([]);
      expect(filesUnder(outside)).toEqual([]);
      expect(filesUnder(path.dirname(notesRoot))).not.toContain("escape.md");
    });

    test(`AC11: folder ${JSON.stringify(bad)} is refused, non-retryable, naming the value, and nothing is written`, async () => {
      const err = await failure(write({ folder: bad, filename: "ok.md", content: "pwned" }));
      expect(err.retryable).toBe(false);
      expect(err.message).toContain(`note: "folder" ${JSON.stringify(bad)}`);
      expect(filesUnder(notesRoot)).toEqual([]);
      expect(filesUnder(outside)).toEqual([]);
    });
  }

  test("AC11: a folder that is a symbolic link to a directory outside the root is refused and nothing lands outside", async () => {
    mkdirSync(notesRoot, { recursive: true });
    symlinkSync(outside, path.join(notesRoot, "linked"), "dir");
    const err = await failure(write({ folder: "linked", filename: "x.md", content: "pwned" }));
    expect(err.retryable).toBe(false);
    expect(err.message).toContain('note: "folder" "linked"');
    expect(err.message).toContain("outside the notes folder");
    expect(readdirSync(outside)).toEqual([]);

    // Deeper in the chain, and in append mode, it is refused just the same.
    const deeper = await failure(write({ folder: "linked/sub", filename: "x.md", content: "pwned", mode: "append" }));
    expect(deeper.retryable).toBe(false);
    expect(readdirSync(outside)).toEqual([]);
  });

  test("a symbolic link to a folder inside the root is followed", async () => {
    mkdirSync(path.join(notesRoot, "real"), { recursive: true });
    symlinkSync(path.join(notesRoot, "real"), path.join(notesRoot, "alias"), "dir");
    const written = pathOf((await write({ folder: "alias", filename: "x.md", content: "ok" })).output);
    expect(written).toBe(path.join(realRoot(), "real", "x.md"));
  });

  test("a file name that is a symbolic link to a file outside is never written through", async () => {
    mkdirSync(notesRoot, { recursive: true });
    const target = path.join(outside, "secret.txt");
    writeFileSync(target, "original");
    symlinkSync(target, path.join(notesRoot, "log.md"));

    const appended = await failure(write({ filename: "log.md", content: "pwned", mode: "append" }));
    expect(appended.retryable).toBe(false);
    expect(appended.message).toMatch(/symbolic link/);
    // create mode treats the link as a taken name and picks the next one.
    const created = pathOf((await write({ filename: "log.md", content: "fine" })).output);
    expect(path.basename(created)).toBe("log (2).md");
    expect(readFileSync(target, "utf8")).toBe("original");
    expect(readdirSync(outside)).toEqual(["secret.txt"]);
  });

  test("append mode appends on a new line, creating the file when missing", async () => {
    const first = pathOf((await write({ folder: "log", filename: "days.md", content: "- monday", mode: "append" })).output);
    await write({ folder: "log", filename: "days.md", content: "- tuesday\n", mode: "append" });
    await write({ folder: "log", filename: "days.md", content: "- wednesday", mode: "append" });
    expect(readFileSync(first, "utf8")).toBe("- monday\n- tuesday\n- wednesday");
    expect(filesUnder(notesRoot)).toEqual([path.join("log", "days.md")]);
  });

  test("the file name is sanitized; Windows device names get a leading _; a retried write is not repeated", async () => {
    const odd = pathOf((await write({ filename: "Café: plan? <v2>.md", content: "x" })).output);
    expect(path.basename(odd)).toBe("Cafe_ plan_ _v2_.md");
    const device = pathOf((await write({ filename: "CON", content: "x" })).output);
    expect(path.basename(device)).toBe("_CON");
    const hidden = pathOf((await write({ folder: ".obsidian/plugins", filename: ".hot.js", content: "x" })).output);
    expect(path.relative(realRoot(), hidden)).toBe(path.join("obsidian", "plugins", "hot.js"));

    const again = createActionContext({ env: { DATA_DIR: ctx.config.dataDir, NOTES_ROOT: notesRoot }, progress: { path: odd } });
    const resumed = await write({ filename: "Café: plan? <v2>.md", content: "x" }, again);
    expect(pathOf(resumed.output)).toBe(odd);
    expect(filesUnder(notesRoot).filter((f) => f.startsWith("Cafe_"))).toHaveLength(1);
  });

  test("empty filename or content fails clearly; unknown keys and modes are refused on save", async () => {
    expect(noteConfigSchema.safeParse({ filename: "", content: "x" }).success).toBe(false);
    expect(noteConfigSchema.safeParse({ filename: "a.md", content: "x", mode: "overwrite" }).success).toBe(false);
    expect(noteConfigSchema.safeParse({ filename: "a.md", content: "x", path: "/tmp" }).success).toBe(false);
    expect(noteConfigSchema.parse({ filename: "a.md", content: "x", mode: "" }).mode).toBe("create");
    const err = await failure(noteAction.run({ filename: " ", content: "x", mode: "create" }, ctx));
    expect(err.message).toBe('note: "filename" rendered to an empty string');
    expect(err.retryable).toBe(false);
  });
});

/** The temp dir may itself sit behind a link (macOS /var → /private/var): compare real paths. */
const realRoot = (): string => realpathSync(notesRoot);

describe("sanitizeFilename", () => {
  test.each([
    ["report.pdf", "report.pdf"],
    ["C:\\Users\\me\\report.pdf", "report.pdf"],
    ["../../etc/passwd", "passwd"],
    ["．．／x.md", "x.md"],
    ["%2e%2e%2fx.md", "_2e_2e_2fx.md"],
    ["a\u0000b.md", "a_b.md"],
    [".env", "env"],
    ["..", "file"],
    ["", "file"],
    ["nul.txt", "_nul.txt"],
    ["COM1", "_COM1"],
    ["notes. ", "notes"],
    ["Résumé 2026.docx", "Resume 2026.docx"],
    ["😀😀.png", "_.png"],
  ])("%j → %j", (input, expected) => {
    expect(sanitizeFilename(input)).toBe(expected);
  });

  test("long names are cut to 200 characters keeping the extension", () => {
    const out = sanitizeFilename("a".repeat(300) + ".md");
    expect(out.length).toBe(200);
    expect(out.endsWith(".md")).toBe(true);
  });

  test("the fallback is used when nothing is left", () => {
    expect(sanitizeFilename("???".replace(/\?/g, "."), "attachment")).toBe("attachment");
  });
});
