/**
 * The feed-reading thread (lib/feeds/thread.ts starts it): bytes in, a ParsedFeed or the reason it
 * is none out. Everything that costs time in proportion to what a stranger wrote (decoding,
 * parsing, the item fields) happens here, never on a process's event loop.
 */
import { parentPort } from "node:worker_threads";
import { decodeFeed } from "./decode";
import { FeedFormatError, readFeed } from "./read";
import type { FeedJob, FeedJobResult } from "./thread";

const port = parentPort;
if (!port) throw new Error("feeds: thread-main.ts runs only as a worker thread");

port.on("message", (job: FeedJob) => {
  void read(job).then((result) => port.postMessage(result));
});

async function read(job: FeedJob): Promise<FeedJobResult> {
  try {
    const { text } = decodeFeed(Buffer.from(job.bytes.buffer, job.bytes.byteOffset, job.bytes.byteLength), job.contentType);
    return { id: job.id, feed: await readFeed(text, { feedUrl: job.feedUrl }) };
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    return { id: job.id, error: message, formatError: err instanceof FeedFormatError };
  }
}
