import type { IncomingMessage, ServerResponse } from "node:http";
import { TooLargeError } from "../core/errors";

/**
 * Bounded request bodies, for every route. A body is refused by its declared Content-Length
 * before a byte of it is read, and a body without one (chunked) is counted while it is read:
 * reading stops at the limit, so no more than `limit` bytes of a request are ever held in memory,
 * whatever the sender streams. A 300 MB login body therefore costs the web process nothing.
 *
 * `readRequestBody` takes a Web Request, so it works the same under Next's route handler today and
 * under any Fetch-API router (Hono's `c.req.raw`) later; `readNodeBody` is the lean ingress's.
 */

/** Whether a Content-Length header promises more than `limit` bytes (an absent one promises nothing). */
export function declaresMoreThan(contentLength: string | string[] | null | undefined, limit: number): boolean {
  if (contentLength === null || contentLength === undefined || contentLength === "") return false;
  const n = Number(Array.isArray(contentLength) ? contentLength[0] : contentLength);
  return !Number.isFinite(n) || n > limit;
}

/**
 * The body of a Web Request, at most `limit` bytes; throws TooLargeError (413) otherwise. The
 * stream is not cancelled at the limit: with Node's Request that destroys the socket before the
 * 413 can be sent. It is simply not read on; the unread bytes stay in the kernel's socket buffer,
 * TCP backpressure stops the sender, and the 413 closes the connection (see `closeWhenUnread`).
 */
export async function readRequestBody(req: Request, limit: number): Promise<Buffer> {
  if (declaresMoreThan(req.headers.get("content-length"), limit)) throw new TooLargeError(limit);
  if (!req.body) return Buffer.alloc(0);
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      chunks.length = 0;
      reader.releaseLock();
      throw new TooLargeError(limit);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks, size);
}

/** The body of a node:http request, or null as soon as it passes `limit` bytes (nothing more is buffered). */
export function readNodeBody(req: IncomingMessage, limit: number): Promise<Buffer | null> {
  if (declaresMoreThan(req.headers["content-length"], limit)) return Promise.resolve(null);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on("data", (chunk: Buffer) => {
      if (over) return;
      size += chunk.length;
      if (size > limit) {
        over = true;
        chunks.length = 0;
        resolve(null);
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => {
      if (!over) resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    });
    req.on("error", reject);
  });
}

/**
 * server.ts, before a request goes on to Next: a declared body over `limit` (the largest any route
 * accepts) is answered 413 at once and the connection closed (call `closeWhenUnread` first).
 * Returns true when it answered.
 */
export function refuseDeclaredOversize(req: IncomingMessage, res: ServerResponse, limit: number): boolean {
  if (!declaresMoreThan(req.headers["content-length"], limit)) return false;
  const text = JSON.stringify({ error: `request body larger than ${limit} bytes` });
  res.writeHead(413, { "content-type": "application/json", "content-length": Buffer.byteLength(text), connection: "close" });
  res.end(text);
  return true;
}

/**
 * A response finished while its request body was still arriving (a 413 from `readRequestBody`,
 * any handler that answers without reading): the connection is closed, so a sender cannot keep
 * the socket and its unread bytes for the keep-alive timeout, but with a lingering close (RFC 9112
 * §9.6). Node closes a `connection: close` answer as soon as it is written (destroySoon), and with
 * body bytes still arriving the kernel then resets the connection; the reset can beat the answer
 * to the client, which then sees ECONNRESET instead of its 413. Here the server stops sending
 * (FIN), lets the client read the answer, and closes after `lingerMs` whatever the client does.
 */
export function closeWhenUnread(req: IncomingMessage, res: ServerResponse, lingerMs = 2000): void {
  res.once("finish", () => {
    if (req.complete) return;
    const socket = req.socket;
    // Node's own close, registered just before this listener ran; if a later Node registers it
    // differently this finds nothing, and the connection is simply closed at once as before.
    // By reference, not called: it is the very function Node registered, so `this` never matters.
    // eslint-disable-next-line @typescript-eslint/unbound-method
    socket.removeListener("finish", socket.destroy);
    socket.end();
    const timer = setTimeout(() => socket.destroy(), lingerMs);
    timer.unref();
    socket.once("close", () => clearTimeout(timer));
  });
}
