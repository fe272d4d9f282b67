/** Files that came with an event (an email's attachments). */
/** One file of an event (an inbound mail attachment) as it is saved. */
export interface EventFileInput {
  /** Already sanitized (lib/files/sanitize) and unique within the event. */
  filename: string;
  contentType: string;
  content: Buffer;
}

export interface StoredEventFile {
  contentType: string;
  size: number;
  content: Buffer;
}

/**
 * Event files in the database: whichever host received the mail, every web process serves
 * its attachments. Saved before the event row (which may turn out a duplicate), so there is no
 * foreign key: whoever deletes events deletes their files too (applet deletion, retention).
 */
export interface EventFilesStore {
  /** The event's files, all or none. Throws when the event already has a file of one of those names. */
  save(eventId: string, files: EventFileInput[], now: string): Promise<void>;
  /** Gives `toEventId` a copy of every file of `fromEventId` (one message matching several applets); how many. */
  copy(fromEventId: string, toEventId: string, now: string): Promise<number>;
  get(eventId: string, filename: string): Promise<StoredEventFile | null>;
  /** Removes every file of these events; how many files. */
  deleteForEvents(eventIds: string[]): Promise<number>;
}
