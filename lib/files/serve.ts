import type { IncomingMessage, ServerResponse } from "node:http";
import type { App } from "../app";
import { readEventFile } from "./events";
import { sanitizeFilename } from "./sanitize";
import { verifyFileSignature } from "./signed-url";

/**
 * `GET /api/files/events/<eventId>/<filename>?exp=&sig=`: the lean ingress handler (no Next, no
 * session; the signed link is the credential). Files are always downloads, never rendered: a
 * stranger chose both the bytes and the claimed type, and they are served from the app's origin.
 */
export function handleFileRequest(
  app: Pick<App, "config" | "clock" | "log" | "store">,
  req: IncomingMessage,
  res: ServerResponse,
  pathname: string,
  search: URLSearchParams,
): void {
  serve(app, req, res, pathname, search).catch((err: unknown) => {
    app.log.error("files: serving failed", { path: pathname, err });
    if (!res.headersSent) send(res, 500, "internal error");
    else res.destroy();
  });
}

async function serve(app: Pick<App, "config" | "clock" | "log" | "store">, req: IncomingMessage, res: ServerResponse, pathname: string, search: URLSearchParams) {
  if (req.method !== "GET" && req.method !== "HEAD") {
    res.setHeader("Allow", "GET, HEAD");
    return send(res, 405, "method not allowed");
  }
  const target = parsePath(pathname);
  if (!target) return send(res, 404, "not found");
  const { eventId, filename } = target;

  const check = verifyFileSignature(app.config.sessionSecret, eventId, filename, search.get("exp"), search.get("sig"), app.clock.now());
  if (check !== "ok") return send(res, 403, check === "expired" ? "link expired" : "bad signature");

  // The signature already pins the name; this keeps a leaked secret from naming anything else.
  if (sanitizeFilename(filename, "file", { keepLetters: true }) !== filename) return send(res, 404, "not found");
  // From the database, whichever host received the mail (a legacy folder of an older install otherwise).
  const file = await readEventFile(app, eventId, filename);
  if (!file) return send(res, 404, "not found");

  res.writeHead(200, {
    "Content-Type": file.contentType,
    "Content-Length": file.content.length,
    "Content-Disposition": `attachment; filename="${asciiFallback(filename)}"; filename*=UTF-8''${encodeRfc5987(filename)}`,
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'; sandbox",
    "Cache-Control": "private, no-store",
    "Referrer-Policy": "no-referrer",
  });
  res.end(req.method === "HEAD" ? undefined : file.content);
}

/** `/api/files/events/<eventId>/<filename>` with each segment percent-decoded; null otherwise. */
function parsePath(pathname: string): { eventId: string; filename: string } | null {
  const m = /^\/api\/files\/events\/([^/]+)\/([^/]+)$/.exec(pathname);
  if (!m) return null;
  try {
    const eventId = decodeURIComponent(m[1]!);
    const filename = decodeURIComponent(m[2]!);
    if (!/^[A-Za-z0-9-]{1,64}$/.test(eventId) || filename === "" || /[/\\\0]/.test(filename)) return null;
    return { eventId, filename };
  } catch {
    return null;
  }
}

const asciiFallback = (name: string): string => name.replace(/[^\x20-\x7e]|["\\]/g, "_");

/** RFC 5987 value: percent-encode everything outside attr-char. */
const encodeRfc5987 = (name: string): string =>
  encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

function send(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { "Content-Type": "text/plain; charset=utf-8", "X-Content-Type-Options": "nosniff", "Cache-Control": "no-store" });
  res.end(message);
}
