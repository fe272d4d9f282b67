import { readFile, rm, stat } from "node:fs/promises";
import path from "node:path";
import type { EventFileInput, Store, StoredEventFile } from "../db/store";

/**
 * Files that belong to one event (inbound mail attachments). They live in the database
 * (`event_files`, lib/db/store), not on the receiving host's disk: with workers and web
 * processes on several hosts, the worker that received a message and the web process that serves
 * its signed link share only the database. They live and die with their event: applet deletion
 * and retention call deleteEventFiles with the ids of the events they delete.
 *
 * Installs from before kept them under `DATA_DIR/files/events/<eventId>/` (and a `.meta.json` of
 * content types): those are still served and deleted from there, never written.
 */

export const ATTACHMENT_MAX_BYTES = 5 * 1024 * 1024;
export const MESSAGE_ATTACHMENTS_MAX_BYTES = 20 * 1024 * 1024;

/** Content types of a legacy folder's files. A dot name: sanitized attachment names never start with one. */
const META_FILE = ".meta.json";
const EVENT_ID = /^[A-Za-z0-9-]{1,64}$/;

export type EventFile = EventFileInput;

export const eventFilesRoot = (dataDir: string): string => path.join(dataDir, "files", "events");

/** The legacy folder of an event's files (installs from before the files moved into the database). */
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

/** Stores the event's files, all or none. */
export async function saveEventFiles(store: Pick<Store, "eventFiles">, eventId: string, files: EventFile[], now: Date): Promise<void> {
  if (!EVENT_ID.test(eventId)) throw new Error(`files: invalid event id ${JSON.stringify(eventId.slice(0, 80))}`);
  for (const f of files) {
    if (f.filename === "" || f.filename.startsWith(".") || /[/\\\0]/.test(f.filename)) throw new Error(`files: refusing unsanitized file name ${JSON.stringify(f.filename)}`);
  }
  await store.eventFiles.save(eventId, files, now.toISOString());
}

/**
 * Gives `toEventId` the same files as `fromEventId` (one message matching several applets: each
 * event owns its copy, so deleting one never breaks another's links).
 */
export async function copyEventFiles(store: Pick<Store, "eventFiles">, fromEventId: string, toEventId: string, now: Date): Promise<void> {
  await store.eventFiles.copy(fromEventId, toEventId, now.toISOString());
}

/** Removes the events' files (rows, and a legacy folder where one is left); events without files are fine. */
export async function deleteEventFiles(app: { store: Pick<Store, "eventFiles">; config: { dataDir: string } }, eventIds: string[]): Promise<void> {
  if (eventIds.length === 0) return;
  await app.store.eventFiles.deleteForEvents(eventIds);
  await Promise.all(eventIds.filter((id) => EVENT_ID.test(id)).map((id) => rm(eventFilesDir(app.config.dataDir, id), { recursive: true, force: true })));
}

/** One file of an event: from the database, else from a legacy folder; null when there is none. */
export async function readEventFile(app: { store: Pick<Store, "eventFiles">; config: { dataDir: string } }, eventId: string, filename: string): Promise<StoredEventFile | null> {
  const stored = await app.store.eventFiles.get(eventId, filename);
  if (stored) return stored;
  const dir = eventFilesDir(app.config.dataDir, eventId);
  const file = path.resolve(dir, filename);
  if (path.dirname(file) !== dir || filename.startsWith(".")) return null;
  const info = await stat(file).catch(() => null);
  if (!info?.isFile()) return null;
  const content = await readFile(file);
  return { contentType: (await legacyContentType(dir, filename)) ?? "application/octet-stream", size: content.length, content };
}

async function legacyContentType(dir: string, filename: string): Promise<string | null> {
  let meta: unknown;
  try {
    meta = JSON.parse(await readFile(path.join(dir, META_FILE), "utf8"));
  } catch {
    return null;
  }
  if (!meta || typeof meta !== "object" || !Object.hasOwn(meta, filename)) return null;
  const entry: unknown = (meta as Record<string, unknown>)[filename];
  const type = entry && typeof entry === "object" ? (entry as { content_type?: unknown }).content_type : undefined;
  return typeof type === "string" ? type : null;
}
