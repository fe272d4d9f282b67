import { constants } from "node:os";

/**
 * Pure text plumbing of the launcher: prefixes, whole lines, exit codes.
 */

/** Puts `prefix` at the start of every line of a stream of text, a line cut across chunks once. */
export function linePrefixer(prefix: string): (chunk: string) => string {
  let atLineStart = true;
  return (chunk) => {
    if (chunk === "") return "";
    const out = (atLineStart ? prefix : "") + chunk.replace(/\n(?=[\s\S])/g, `\n${prefix}`);
    atLineStart = chunk.endsWith("\n");
    return out;
  };
}

/**
 * Cuts a stream of text into whole lines (each with its "\n"), so another process's output never
 * lands in the middle of one of ours; `end` gives what is left of an unfinished last line.
 */
export function lineSplitter(): { push(chunk: string): string[]; end(): string[] } {
  let pending = "";
  return {
    push(chunk) {
      pending += chunk;
      const cut = pending.lastIndexOf("\n");
      if (cut < 0) return [];
      const lines = pending.slice(0, cut + 1).match(/[^\n]*\n/g) ?? [];
      pending = pending.slice(cut + 1);
      return lines;
    },
    end() {
      const rest = pending;
      pending = "";
      return rest === "" ? [] : [`${rest}\n`];
    },
  };
}

/** The code a shell reports for a process that ended with `code`, or by `signal` (128 + its number). */
export function exitCodeOf(code: number | null, signal: NodeJS.Signals | null): number {
  if (code !== null) return code;
  const n = signal ? constants.signals[signal] : undefined;
  return n === undefined ? 1 : 128 + n;
}

/** "exit code 1", "signal SIGKILL": how a process ended, in a log line. */
export const howItEnded = (code: number | null, signal: NodeJS.Signals | null): string => (code !== null ? `exit code ${code}` : `signal ${signal ?? "unknown"}`);
