/**
 * Template syntax: `{{ path | filter:'arg' | filter }}`, `\{{` for a literal `{{`.
 * Parsing never throws: text that is not a valid expression is kept literally (with a warning
 * from the renderer), and an unclosed `{{` leaves the rest of the string as text.
 */
import { Lru } from "../core/lru";

export type FilterArg = string | number;

export interface FilterCall {
  name: string;
  args: FilterArg[];
}

export interface Expression {
  /** The path as written (trimmed), used in `unresolved: …` warnings and by `templatePaths`. */
  pathText: string;
  /** Property keys; bracket indexes are kept as strings because lookups are by own property. */
  path: string[];
  filters: FilterCall[];
}

export type Piece =
  | { kind: "text"; text: string }
  | { kind: "expr"; expr: Expression }
  | { kind: "invalid"; text: string; reason: string };

const OPEN = "{{";
const CLOSE = "}}";

// Rendering runs for every string leaf of every action config on every run; templates repeat.
const CACHE_LIMIT = 1000;
const CACHEABLE_LENGTH = 8192;
const cache = new Lru<string, Piece[]>(CACHE_LIMIT);

export function parseTemplate(template: string): Piece[] {
  const cached = cache.get(template);
  if (cached) return cached;
  const pieces = parseUncached(template);
  if (template.length <= CACHEABLE_LENGTH) {
    cache.set(template, pieces);
  }
  return pieces;
}

function parseUncached(template: string): Piece[] {
  const pieces: Piece[] = [];
  let text = "";
  let i = 0;
  const n = template.length;
  while (i < n) {
    const open = template.indexOf(OPEN, i);
    if (open === -1) {
      text += template.slice(i);
      break;
    }
    if (open > 0 && template.charCodeAt(open - 1) === 92 /* \ */) {
      text += template.slice(i, open - 1) + OPEN;
      i = open + 2;
      continue;
    }
    text += template.slice(i, open);
    const close = findClose(template, open + 2);
    if (close === -1) {
      text += template.slice(open);
      break;
    }
    const body = template.slice(open + 2, close);
    const parsed = parseExpression(body);
    if (typeof parsed === "string") {
      if (text) pieces.push({ kind: "text", text });
      text = "";
      pieces.push({ kind: "invalid", text: template.slice(open, close + 2), reason: parsed });
    } else {
      if (text) pieces.push({ kind: "text", text });
      text = "";
      pieces.push({ kind: "expr", expr: parsed });
    }
    i = close + 2;
  }
  if (text) pieces.push({ kind: "text", text });
  return pieces;
}

/** Index of the `}}` closing an expression, skipping quoted arguments (`default:'}}'`). */
function findClose(s: string, from: number): number {
  let quote = 0;
  for (let i = from; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (quote) {
      if (c === 92) i++;
      else if (c === quote) quote = 0;
    } else if (c === 39 || c === 34) {
      quote = c;
    } else if (c === 125 && s.charCodeAt(i + 1) === 125) {
      return i;
    }
  }
  // An apostrophe in plain text (`{{ it's }}`) must not swallow the rest of the template.
  return quote ? s.indexOf(CLOSE, from) : -1;
}

class Cursor {
  i = 0;
  constructor(readonly s: string) {}
  get done(): boolean {
    return this.i >= this.s.length;
  }
  peek(): string {
    return this.s[this.i] ?? "";
  }
  skipWs(): void {
    while (this.i < this.s.length && /\s/.test(this.s[this.i] ?? "")) this.i++;
  }
  match(re: RegExp): string | null {
    re.lastIndex = this.i;
    const m = re.exec(this.s);
    if (!m) return null;
    this.i += m[0].length;
    return m[0];
  }
}

// Sticky regexes: matched at the cursor only.
const SEGMENT = /[^\s.[\]|'"{}]+/y;
const INDEX = /\d+/y;
const FILTER_NAME = /[A-Za-z_][A-Za-z0-9_]*/y;
const NUMBER = /-?\d+(?:\.\d+)?/y;

/** An Expression, or a string saying why the text is not one. */
function parseExpression(body: string): Expression | string {
  const c = new Cursor(body);
  c.skipWs();
  const start = c.i;
  const path: string[] = [];
  const first = c.match(SEGMENT);
  if (first === null) return "expected a path";
  path.push(first);
  for (;;) {
    const ch = c.peek();
    if (ch === ".") {
      c.i++;
      const seg = c.match(SEGMENT);
      if (seg === null) return "expected a name after '.'";
      path.push(seg);
    } else if (ch === "[") {
      c.i++;
      c.skipWs();
      const q = c.peek();
      let key: string | null;
      if (q === "'" || q === '"') key = readQuoted(c);
      else key = c.match(INDEX);
      if (key === null) return "expected a number or a quoted key inside [ ]";
      c.skipWs();
      if (c.peek() !== "]") return "expected ']'";
      c.i++;
      path.push(key);
    } else {
      break;
    }
  }
  const pathText = body.slice(start, c.i);
  const filters: FilterCall[] = [];
  c.skipWs();
  while (c.peek() === "|") {
    c.i++;
    c.skipWs();
    const name = c.match(FILTER_NAME);
    if (name === null) return "expected a filter name after '|'";
    const args: FilterArg[] = [];
    c.skipWs();
    if (c.peek() === ":") {
      c.i++;
      for (;;) {
        c.skipWs();
        const arg = readArg(c);
        if (arg === null) return `expected a quoted or numeric argument for ${name}`;
        args.push(arg);
        c.skipWs();
        if (c.peek() !== ",") break;
        c.i++;
      }
    }
    filters.push({ name, args });
    c.skipWs();
  }
  if (!c.done) return `unexpected '${c.peek()}'`;
  return { pathText, path, filters };
}

function readArg(c: Cursor): FilterArg | null {
  const q = c.peek();
  if (q === "'" || q === '"') return readQuoted(c);
  const num = c.match(NUMBER);
  return num === null ? null : Number(num);
}

function readQuoted(c: Cursor): string | null {
  const quote = c.peek();
  c.i++;
  let out = "";
  while (!c.done) {
    const ch = c.peek();
    c.i++;
    if (ch === "\\" && !c.done) {
      out += c.peek();
      c.i++;
    } else if (ch === quote) {
      return out;
    } else {
      out += ch;
    }
  }
  return null;
}
