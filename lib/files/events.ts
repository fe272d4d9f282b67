import { randomBytes } from "node:crypto";
import { link, mkdir, readFile, readdir, rename, rm, writeFile, copyFile } from "node:fs/promises";
import path from "node:path";

/**
 * Files that belong to one event (inbound mail attachments): `DATA_DIR/files/events/<eventId>/`.
 * The folder lives and dies with its event; retention and applet deletion call deleteEventFiles.
 * A folder is written under a temporary name and renamed into place, so a crash mid-write leaves
 * only a `.tmp-*` folder (removed by cleanupTemporaryEventFiles), never a half-written event folder.
 */

export const ATTACHMENT_MAX_BYTES = 5 * 1024 * 1024;
export const MESSAGE_ATTACHMENTS_MAX_BYTES = 20 * 1024 * 1024;

/** Content types of the folder's files. A dot name: sanitized attachment names never start with one. */
const META_FILE = ".meta.json";
const EVENT_ID = /^[A-Za-z0-9-]{1,64}$/;

export interface EventFile {
  /** Already sanitized (lib/files/sanitize) and unique within the event. */
  filename: string;
  contentType: string;
  content: Buffer;
}

export const eventFilesRoot = (dataDir: string): string => path.join(dataDir, "files", "events");

export function eventFilesDir(dataDir: string, eventId: string): string {
  if (!EVENT_ID.test(eventId)) throw new Error(`files: invalid event id ${JSON.stringify(eventId.slice(0, 80))}`);
  return path.join(eventFilesRoot(dataDir), eventId);
}

/**
 * Which attachments to keep, in message order: each at most `perFile` bytes, and together at most
 * `perMessage`. One that does not fit is skipped (listed with `url: null`); a later, smaller one
 * that still fits is kept.
 */
export function selectStorable(sizes: number[], limits = { perFile: ATTACHMENT_MAX_BYTES, perMessage: MESSAGE_ATTACHMENTS_MAX_BYTES }): boolean[] {
  let total = 0;
  return sizes.map((size) => {
    if (size > limits.perFile || total + size > limits.perMessage) return false;
    total += size;
    return true;
  });
}

export async function saveEventFiles(dataDir: string, eventId: string, files: EventFile[]): Promise<void> {
  const dir = eventFilesDir(dataDir, eventId);
  const tmp = await makeTemporaryDir(dataDir);
  try {
    const meta: Record<string, { content_type: string; size: number }> = {};
    for (const f of files) {
      if (f.filename.startsWith(".") || f.filename.includes("/") || f.filename.includes("\\")) {
        throw new Error(`files: refusing unsanitized file name ${JSON.stringify(f.filename)}`);
      }
      await writeFile(path.join(tmp, f.filename), f.content, { flag: "wx" });
      meta[f.filename] = { content_type: f.contentType, size: f.content.length };
    }
    await writeFile(path.join(tmp, META_FILE), JSON.stringify(meta));
    await rename(tmp, dir);
  } catch (err) {
    await rm(tmp, { recursive: true, force: true });
    throw err;
  }
}

/**
 * Gives `toEventId` the same files as `fromEventId` (one message matching several applets: each
 * event owns its folder, so deleting one never breaks another's links). Hard links where the
 * filesystem allows, copies otherwise.
 */
export async function copyEventFiles(dataDir: string, fromEventId: string, toEventId: string): Promise<void> {
  const from = eventFilesDir(dataDir, fromEventId);
  const dir = eventFilesDir(dataDir, toEventId);
  const tmp = await makeTemporaryDir(dataDir);
  try {
    for (const name of await readdir(from)) {
      await link(path.join(from, name), path.join(tmp, name)).catch(() => copyFile(path.join(from, name), path.join(tmp, name)));
    }
    await rename(tmp, dir);
  } catch (err) {
    await rm(tmp, { recursive: true, force: true });
    throw err;
  }
}

/** Removes the event's folder; a missing folder is fine (events without attachments have none). */
export async function deleteEventFiles(dataDir: string, eventId: string): Promise<void> {
  await rm(eventFilesDir(dataDir, eventId), { recursive: true, force: true });
}

/** Leftovers of writes interrupted by a crash. Called when the receiver starts. */
export async function cleanupTemporaryEventFiles(dataDir: string): Promise<void> {
  const root = eventFilesRoot(dataDir);
  const names = await readdir(root).catch(() => [] as string[]);
  await Promise.all(names.filter((n) => n.startsWith(".tmp-")).map((n) => rm(path.join(root, n), { recursive: true, force: true })));
}

/** The stored content type of one file, or null when the event or the file is unknown. */
export async function readEventFileType(dataDir: string, eventId: string, filename: string): Promise<string | null> {
  let meta: unknown;
  try {
    meta = JSON.parse(await readFile(path.join(eventFilesDir(dataDir, eventId), META_FILE), "utf8"));
  } catch {
    return null;
  }
  if (!meta || typeof meta !== "object" || !Object.hasOwn(meta, filename)) return null;
  const entry: unknown = (meta as Record<string, unknown>)[filename];
  const type = entry && typeof entry === "object" ? (entry as { content_type?: unknown }).content_type : undefined;
  return typeof type === "string" ? type : null;
}

async function makeTemporaryDir(dataDir: string): Promise<string> {
  const tmp = path.join(eventFilesRoot(dataDir), `.tmp-${randomBytes(8).toString("hex")}`);
  await mkdir(tmp, { recursive: true });
  return tmp;
}
