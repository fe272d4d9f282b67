import { createHmac } from "node:crypto";
import { constants as fsConstants } from "node:fs";
import fs, { type FileHandle } from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import { field } from "../plugin";
import { ActionError } from "../core/errors";
import { sanitizeFilename } from "../files/sanitize";
import { requireRendered, requiredText } from "./common";
import type { ActionContext, ActionPlugin } from "./types";

/**
 * Writes a text file under NOTES_ROOT (Markdown notes, a journal, an Obsidian vault).
 *
 * `folder` and `filename` are templates fed by strangers' data (an email subject, a feed title), so
 * the path is treated as hostile:
 * - refused with a non-retryable error naming the value: `..` (and any dot-only segment such as
 *   `....`), absolute paths (`/etc/passwd`, `//srv/share`), drive letters (`C:`), backslashes (so
 *   `..\x`, `C:\x` and UNC `\\srv\share` all fail), null bytes, and each of these once more after
 *   Unicode normalization (fullwidth `．．／`) and after percent-decoding (`%2e%2e%2f`). A `/` in
 *   `filename` is refused too: folders belong in `folder`.
 * - then every segment is sanitized (lib/files/sanitize): `[a-zA-Z0-9._ -]` only, no leading dot (no
 *   hidden files or folders: a vault's `.obsidian` holds plug-in code), Windows device names such as
 *   `CON` get a leading `_` (`_CON.md`). An empty filename is an error, like any required field.
 * - the folder chain is walked from the real path of NOTES_ROOT one segment at a time: missing
 *   folders are created, a symbolic link is followed only when its target stays inside NOTES_ROOT,
 *   and the file itself is opened with O_NOFOLLOW (and O_EXCL in `create` mode), so a planted link
 *   can neither lead the write outside the root nor be written through. `append` also refuses a
 *   file with more than one hard link: another name of it may live outside the root.
 *
 * `create` never overwrites: an existing `name.md` gives `name (2).md`, `name (3).md`, … (the next
 * after the highest copy in the folder), claimed atomically with O_EXCL. `append` adds to the file
 * (creating it when missing), starting on a new line when the file does not end with one.
 */

/** The highest ` (n)` a name gets in `create` mode. */
const MAX_COPIES = 100_000;

const modeSchema = z
  .union([z.literal(""), z.enum(["create", "append"])])
  .optional()
  .transform((v): "create" | "append" => v || "create");

export const noteConfigSchema = z.strictObject({
  folder: field(z.string().optional(), {
      label: "Folder",
      kind: "text",
      template: true,
      placeholder: "journal/2026",
      help: "Inside the notes folder (NOTES_ROOT); separate sub-folders with /. Empty: the notes folder itself. Created when missing.",
    }),
  filename: field(requiredText("note", "filename"), {
      label: "File name",
      kind: "text",
      required: true,
      template: true,
      placeholder: "{{trigger.title | slug}}.md",
      preview: "notePath",
      help: "Letters, digits, dot, dash, underscore and space are kept; anything else becomes _.",
    }),
  content: field(requiredText("note", "content"), { label: "Content", kind: "textarea", required: true, template: true }),
  mode: field(modeSchema, {
      label: "If the file exists",
      kind: "select",
      options: [
        { value: "create", label: "Create a new file: name (2).md, name (3).md, …" },
        { value: "append", label: "Append to it" },
      ],
      help: "Default: create a new file.",
    }),
});

export type NoteConfig = z.output<typeof noteConfigSchema>;

/**
 * What `saveProgress` stores once the file is written, so a crash-requeued retry does not write it
 * twice. The path is stored redacted when a secret is part of it, so it cannot be the proof: `key`
 * is a keyed hash of the real path, and `copy` says which ` (n)` name create mode took, so the
 * retry can rebuild the path from its config and compare. Records with `path` only (before keys)
 * are still honoured.
 */
const progressSchema = z.object({ path: z.string(), copy: z.number().int().min(1).optional(), key: z.string().optional() });

export const noteAction: ActionPlugin<NoteConfig, { notes_root: string }> = {
  type: "note",
  label: "Save a note",
  description: "Write or append a text file (Markdown, a journal) in the notes folder on this server.",
  configSchema: noteConfigSchema,
  // The editor's note path preview and the settings page.
  facts: ({ config }) => ({ notes_root: config.notesRoot }),
  exampleConfig: { folder: "journal", filename: "{{trigger.title | slug}}.md", content: "{{trigger.content}}", mode: "create" },

  async run(config, ctx) {
    const filenameRaw = requireRendered("note", "filename", config.filename).trim();
    const content = requireRendered("note", "content", config.content);
    const folderRaw = (config.folder ?? "").trim();
    const mode = config.mode;

    rejectUnsafe("folder", folderRaw);
    rejectUnsafe("filename", filenameRaw);
    const segments = folderRaw
      .split("/")
      .filter((s) => s.trim() !== "")
      .map((s) => sanitizeFilename(s, "folder"));
    const filename = sanitizeFilename(filenameRaw, "note");
    if (filename !== filenameRaw) ctx.log.debug(`note: file name ${JSON.stringify(filenameRaw)} sanitized to ${JSON.stringify(filename)}`);

    const realRoot = await notesRoot(ctx);
    const dir = await resolveFolder(realRoot, segments, folderRaw);
    const already = await writtenBefore(ctx, realRoot, dir, filename);
    if (already) return { output: { path: already, mode, resumed: true } };

    const { target: written, copy } = mode === "append" ? { target: await appendTo(dir, filename, content), copy: 1 } : await createNew(dir, filename, content);
    // A folder swapped for a link between our walk and the open would show here.
    await assertInside(realRoot, path.dirname(written), folderRaw);
    await ctx.saveProgress({ path: written, copy, key: pathKey(ctx, written) });
    return { output: { path: written, mode } };
  },

  // The same checks and the same path as `run`, found by reading only: no folder is created and
  // no file opened for writing.
  async dryRun(config, ctx) {
    const filenameRaw = requireRendered("note", "filename", config.filename).trim();
    const content = requireRendered("note", "content", config.content);
    const folderRaw = (config.folder ?? "").trim();
    rejectUnsafe("folder", folderRaw);
    rejectUnsafe("filename", filenameRaw);
    const segments = folderRaw
      .split("/")
      .filter((s) => s.trim() !== "")
      .map((s) => sanitizeFilename(s, "folder"));
    const filename = sanitizeFilename(filenameRaw, "note");
    const root = await fs.realpath(ctx.config.notesRoot).catch(() => path.resolve(ctx.config.notesRoot));
    const { dir, missing } = await plannedFolder(root, segments, folderRaw);
    let target = path.join(dir, filename);
    const exists = missing.length === 0 && (await fs.lstat(target).catch(() => null)) !== null;
    if (exists && config.mode === "create") target = path.join(dir, numbered(filename, (await highestCopy(dir, filename)) + 1));
    const verb = config.mode === "append" ? (exists ? "append to" : "create (append mode)") : "create";
    return {
      kind: "file",
      summary: `would ${verb} ${path.relative(root, target) || target}`,
      path: target,
      mode: config.mode,
      exists,
      ...(missing.length ? { folders_created: missing } : {}),
      bytes: Buffer.byteLength(content),
      content,
    };
  },
};

/** `resolveFolder` without creating anything: the folder the note would go to, and the folders it would create. */
async function plannedFolder(realRoot: string, segments: string[], folderRaw: string): Promise<{ dir: string; missing: string[] }> {
  let dir = realRoot;
  const missing: string[] = [];
  for (const segment of segments) {
    const next = path.join(dir, segment);
    const st = missing.length ? null : await fs.lstat(next).catch(() => null);
    if (!st) {
      missing.push(next);
      dir = next;
      continue;
    }
    if (st.isSymbolicLink()) {
      const target = await fs.realpath(next).catch(() => null);
      if (!target || !isInside(realRoot, target)) {
        throw unsafe("folder", folderRaw, `goes through the symbolic link ${JSON.stringify(next)}, which leads outside the notes folder`);
      }
      dir = target;
      continue;
    }
    if (!st.isDirectory()) throw unsafe("folder", folderRaw, `has ${JSON.stringify(next)}, which is a file, not a folder`);
    dir = next;
  }
  return { dir, missing };
}

function unsafe(field: string, value: string, why: string): ActionError {
  return new ActionError(`note: "${field}" ${JSON.stringify(value)} ${why}`, { retryable: false });
}

/** Refuses traversal and absolute forms in the value as written, as Unicode-normalized, and as percent-decoded. */
function rejectUnsafe(field: "folder" | "filename", value: string): void {
  const nfkc = value.normalize("NFKC");
  const variants: [string, string][] = [
    [value, ""],
    [nfkc, " (after Unicode normalization)"],
    [percentDecode(nfkc), " (after percent-decoding)"],
  ];
  for (const [v, how] of variants) {
    if (v.includes("\0")) throw unsafe(field, value, `contains a null byte${how}`);
    if (v.includes("\\")) throw unsafe(field, value, `contains a backslash${how}; use / between folders`);
    if (/^[a-zA-Z]:/.test(v)) throw unsafe(field, value, `starts with a drive letter${how}`);
    if (v.startsWith("/")) throw unsafe(field, value, `is an absolute path${how}; it must be relative to the notes folder`);
    if (v.split("/").some((s) => /^\.+$/.test(s.trim()))) {
      throw unsafe(field, value, `contains a ".." or "." segment${how}; it must stay inside the notes folder`);
    }
    if (field === "filename" && v.includes("/")) {
      throw unsafe(field, value, `contains "/"${how}; a file name cannot hold folders — use "folder" for those`);
    }
  }
}

/** Decodes %XX until stable (double encoding included), leaving malformed sequences as they are. */
function percentDecode(value: string): string {
  let current = value;
  for (let i = 0; i < 4; i++) {
    let next: string;
    try {
      next = decodeURIComponent(current);
    } catch {
      return current;
    }
    if (next === current) return current;
    current = next;
  }
  return current;
}

async function notesRoot(ctx: ActionContext): Promise<string> {
  try {
    await fs.mkdir(ctx.config.notesRoot, { recursive: true });
    return await fs.realpath(ctx.config.notesRoot);
  } catch (err) {
    throw fsError(`note: cannot open the notes folder ${JSON.stringify(ctx.config.notesRoot)} (NOTES_ROOT)`, err);
  }
}

const pathKey = (ctx: ActionContext, file: string): string => createHmac("sha256", ctx.config.sessionSecret).update(file).digest("base64url");

async function writtenBefore(ctx: ActionContext, realRoot: string, dir: string, filename: string): Promise<string | null> {
  const parsed = progressSchema.safeParse(ctx.progress);
  if (!parsed.success) return null;
  const { key, copy } = parsed.data;
  const file = key === undefined ? parsed.data.path : path.join(dir, (copy ?? 1) === 1 ? filename : numbered(filename, copy!));
  if ((key !== undefined && pathKey(ctx, file) !== key) || !isInside(realRoot, file)) return null;
  const st = await fs.lstat(file).catch(() => null);
  if (!st?.isFile()) return null;
  ctx.warn(`note: an earlier attempt already wrote ${file}; not writing it again`);
  return file;
}

const isInside = (root: string, target: string): boolean => {
  const rel = path.relative(root, target);
  return rel === "" || (!rel.startsWith("..") && !path.isAbsolute(rel));
};

async function assertInside(realRoot: string, dir: string, folderRaw: string): Promise<void> {
  const real = await fs.realpath(dir);
  if (!isInside(realRoot, real)) throw unsafe("folder", folderRaw, "leads outside the notes folder");
}

/**
 * Walks (and creates) the folder chain from the real root, one segment at a time, so no symbolic
 * link is ever followed without its target being checked first.
 */
async function resolveFolder(realRoot: string, segments: string[], folderRaw: string): Promise<string> {
  let dir = realRoot;
  for (const segment of segments) {
    const next = path.join(dir, segment);
    let st = await fs.lstat(next).catch((err: NodeJS.ErrnoException) => {
      if (err.code === "ENOENT") return null;
      throw fsError(`note: cannot read ${JSON.stringify(next)}`, err);
    });
    if (!st) {
      try {
        await fs.mkdir(next);
      } catch (err) {
        // Another run may have created it a moment ago; anything else is real.
        if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw fsError(`note: cannot create the folder ${JSON.stringify(next)}`, err);
      }
      st = await fs.lstat(next);
    }
    if (st.isSymbolicLink()) {
      const target = await fs.realpath(next).catch(() => null);
      if (!target || !isInside(realRoot, target)) {
        throw unsafe("folder", folderRaw, `goes through the symbolic link ${JSON.stringify(next)}, which leads outside the notes folder`);
      }
      const targetStat = await fs.stat(target);
      if (!targetStat.isDirectory()) throw unsafe("folder", folderRaw, `has ${JSON.stringify(next)}, which is not a folder`);
      dir = target;
      continue;
    }
    if (!st.isDirectory()) throw unsafe("folder", folderRaw, `has ${JSON.stringify(next)}, which is a file, not a folder`);
    dir = next;
  }
  return dir;
}

/** O_NOFOLLOW is missing on Windows; there, O_EXCL alone still refuses an existing link in create mode. */
const NOFOLLOW = fsConstants.O_NOFOLLOW ?? 0;

/**
 * The name itself first; when it is taken, the copies go on from the highest ` (n)` of it in the
 * folder (one read of the folder, instead of an open per number already taken: the 500th copy of
 * a name tried 500 names), each claimed with O_EXCL, so a copy made meanwhile by another run only
 * moves this one to the next number.
 */
async function createNew(dir: string, filename: string, content: string): Promise<{ target: string; copy: number }> {
  const flags = fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | NOFOLLOW;
  for (let n = 1; n <= MAX_COPIES; ) {
    const target = path.join(dir, n === 1 ? filename : numbered(filename, n));
    let handle: FileHandle;
    try {
      handle = await fs.open(target, flags, 0o644);
    } catch (err) {
      // EEXIST: the name is taken (by a file, a folder or a link).
      if ((err as NodeJS.ErrnoException).code === "EEXIST") {
        n = n === 1 ? (await highestCopy(dir, filename)) + 1 : n + 1;
        continue;
      }
      throw fsError(`note: cannot create ${JSON.stringify(target)}`, err);
    }
    try {
      await handle.writeFile(content, "utf8");
    } catch (err) {
      throw fsError(`note: cannot write ${JSON.stringify(target)}`, err);
    } finally {
      await handle.close();
    }
    return { target, copy: n };
  }
  throw new ActionError(`note: ${JSON.stringify(filename)} already has numbered copies up to (${MAX_COPIES}) in ${JSON.stringify(dir)}; use another name or append mode`, {
    retryable: false,
  });
}

/** The highest n of the ` (n)` copies of `filename` in `dir` (1 when there are none). */
async function highestCopy(dir: string, filename: string): Promise<number> {
  const ext = path.extname(filename);
  const [head, tail] = [`${filename.slice(0, filename.length - ext.length)} (`, `)${ext}`];
  let names: string[];
  try {
    names = await fs.readdir(dir);
  } catch (err) {
    throw fsError(`note: cannot read the folder ${JSON.stringify(dir)}`, err);
  }
  let highest = 1;
  for (const name of names) {
    if (name.length <= head.length + tail.length || !name.startsWith(head) || !name.endsWith(tail)) continue;
    const digits = name.slice(head.length, name.length - tail.length);
    if (/^[1-9]\d{0,8}$/.test(digits)) highest = Math.max(highest, Number(digits));
  }
  return highest;
}

/** `name.md` → `name (2).md`; `name` → `name (2)`. */
export function numbered(filename: string, n: number): string {
  const ext = path.extname(filename);
  return `${filename.slice(0, filename.length - ext.length)} (${n})${ext}`;
}

async function appendTo(dir: string, filename: string, content: string): Promise<string> {
  const target = path.join(dir, filename);
  let handle: FileHandle;
  try {
    handle = await fs.open(target, fsConstants.O_RDWR | fsConstants.O_APPEND | fsConstants.O_CREAT | NOFOLLOW, 0o644);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ELOOP" || code === "EMLINK") {
      throw new ActionError(`note: ${JSON.stringify(target)} is a symbolic link; refusing to write through it`, { retryable: false, cause: err });
    }
    throw fsError(`note: cannot open ${JSON.stringify(target)}`, err);
  }
  try {
    const st = await handle.stat();
    if (!st.isFile()) throw new ActionError(`note: ${JSON.stringify(target)} is not a regular file`, { retryable: false });
    // A hard link planted in the notes folder is the same file as one outside it (a shell profile,
    // a cron file), and O_NOFOLLOW cannot tell: only the link count can.
    if (st.nlink > 1) {
      throw new ActionError(`note: ${JSON.stringify(target)} has ${st.nlink} hard links (the same file has another name, maybe outside the notes folder); refusing to write through it`, { retryable: false });
    }
    let prefix = "";
    if (st.size > 0) {
      const last = Buffer.alloc(1);
      await handle.read(last, 0, 1, st.size - 1);
      if (last[0] !== 0x0a) prefix = "\n";
    }
    await handle.writeFile(prefix + content, "utf8");
  } catch (err) {
    if (err instanceof ActionError) throw err;
    throw fsError(`note: cannot append to ${JSON.stringify(target)}`, err);
  } finally {
    await handle.close();
  }
  return target;
}

/** Codes where the disk may be fine a little later (full disk, too many open files). */
const TRANSIENT_FS = new Set(["ENOSPC", "EMFILE", "ENFILE", "EBUSY", "EAGAIN", "EIO"]);

function fsError(message: string, err: unknown): ActionError {
  const e = err as NodeJS.ErrnoException;
  return new ActionError(`${message}: ${e.code ?? ""} ${e.message ?? String(err)}`.trim(), {
    retryable: typeof e.code === "string" && TRANSIENT_FS.has(e.code),
    cause: err,
  });
}

export default noteAction;
