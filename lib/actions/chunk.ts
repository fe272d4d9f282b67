/**
 * Splits a message into parts of at most `limit` UTF-16 code units (what `String#length` counts,
 * never less than what Discord counts), breaking only at line breaks. Lines are packed greedily
 * in order; a single line longer than `limit` is cut hard, but never inside a surrogate pair, so
 * an emoji is not torn in two. CRLF becomes LF. Parts that are only whitespace are dropped, since
 * Discord refuses an empty message.
 */
export function chunkMessage(text: string, limit = 2000): string[] {
  if (!Number.isInteger(limit) || limit < 2) throw new RangeError(`chunkMessage: limit must be an integer ≥ 2, got ${limit}`);
  const chunks: string[] = [];
  let current: string | null = null;
  for (const line of text.split(/\r?\n/)) {
    for (const piece of splitHard(line, limit)) {
      if (current === null) current = piece;
      else if (current.length + 1 + piece.length <= limit) current += "\n" + piece;
      else {
        chunks.push(current);
        current = piece;
      }
    }
  }
  if (current !== null) chunks.push(current);
  return chunks.filter((c) => c.trim() !== "");
}

/**
 * Pieces of one line. Every piece but the last is `limit` long (or one less, to keep a surrogate
 * pair whole), so the packer above never glues two pieces of one line together with a "\n".
 */
function splitHard(line: string, limit: number): string[] {
  if (line.length <= limit) return [line];
  const pieces: string[] = [];
  let start = 0;
  while (start < line.length) {
    let end = Math.min(start + limit, line.length);
    const last = line.charCodeAt(end - 1);
    if (end < line.length && last >= 0xd800 && last <= 0xdbff) end -= 1;
    pieces.push(line.slice(start, end));
    start = end;
  }
  return pieces;
}
