import type { EventFileInput, StoredEventFile } from "../types";
import type { Sqlite } from "./client";

/** Inbound mail attachments as BLOBs, keyed by event and file name (lib/files/events.ts). */
export function createEventFilesRepo(sqlite: Sqlite) {
  const insert = sqlite.prepare("INSERT INTO event_files (event_id, filename, content_type, size, content, created_at) VALUES (?, ?, ?, ?, ?, ?)");
  const copy = sqlite.prepare(
    "INSERT INTO event_files (event_id, filename, content_type, size, content, created_at) SELECT ?, filename, content_type, size, content, ? FROM event_files WHERE event_id = ?",
  );
  const get = sqlite.prepare<[string, string], { content_type: string; size: number; content: Buffer }>("SELECT content_type, size, content FROM event_files WHERE event_id = ? AND filename = ?");
  const remove = sqlite.prepare("DELETE FROM event_files WHERE event_id = ?");
  const saveAll = sqlite.transaction((eventId: string, files: EventFileInput[], now: string) => {
    for (const f of files) insert.run(eventId, f.filename, f.contentType, f.content.length, f.content, now);
  });
  const removeAll = sqlite.transaction((eventIds: string[]) => eventIds.reduce((n, id) => n + remove.run(id).changes, 0));
  return {
    save: (eventId: string, files: EventFileInput[], now: string): void => saveAll(eventId, files, now),
    copy: (fromEventId: string, toEventId: string, now: string): number => copy.run(toEventId, now, fromEventId).changes,
    get: (eventId: string, filename: string): StoredEventFile | null => {
      const r = get.get(eventId, filename);
      return r ? { contentType: r.content_type, size: r.size, content: r.content } : null;
    },
    deleteForEvents: (eventIds: string[]): number => (eventIds.length ? removeAll(eventIds) : 0),
  };
}
