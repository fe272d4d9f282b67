import type { EventFilesStore } from "../types";
import { query, type Queryable } from "./pool";

/**
 * Inbound mail attachments as bytea, keyed by event and file name (lib/files/events.ts): the
 * worker that received the message writes them, every web process on every host reads them.
 * A save is one statement over arrays, so an event's files land all or none.
 */
export function eventFilesStore(q: Queryable): EventFilesStore {
  return {
    save: async (eventId, files, now) => {
      if (files.length === 0) return;
      await query(
        q,
        `INSERT INTO event_files (event_id, filename, content_type, size, content, created_at)
         SELECT $1, f.filename, f.content_type, f.size, f.content, $2
         FROM unnest($3::text[], $4::text[], $5::int[], $6::bytea[]) AS f(filename, content_type, size, content)`,
        [eventId, now, files.map((f) => f.filename), files.map((f) => f.contentType), files.map((f) => f.content.length), files.map((f) => f.content)],
      );
    },
    copy: async (fromEventId, toEventId, now) =>
      (
        await query(
          q,
          "INSERT INTO event_files (event_id, filename, content_type, size, content, created_at) SELECT $1, filename, content_type, size, content, $2 FROM event_files WHERE event_id = $3",
          [toEventId, now, fromEventId],
        )
      ).rowCount ?? 0,
    get: async (eventId, filename) => {
      const r = (await query<{ content_type: string; size: number; content: Buffer }>(q, "SELECT content_type, size, content FROM event_files WHERE event_id = $1 AND filename = $2", [eventId, filename])).rows[0];
      return r ? { contentType: r.content_type, size: r.size, content: r.content } : null;
    },
    deleteForEvents: async (eventIds) =>
      eventIds.length ? ((await query(q, "DELETE FROM event_files WHERE event_id = ANY($1::text[])", [eventIds])).rowCount ?? 0) : 0,
  };
}
