import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { CliError, EXIT } from "./client";

/** One applet as `GET /api/export` gives it and `POST /api/import` takes it. */
export interface ExportedApplet {
  id: string;
  name: string;
  enabled?: boolean;
  webhook_token: string;
  definition: unknown;
  created_at?: string;
}

/** "Applets as code": one file per applet, named by its id so a rename is a change, not a new file. */
export const fileNameOf = (a: Pick<ExportedApplet, "id">): string => `${a.id}.json`;

export function writeDir(dir: string, applets: ExportedApplet[]): string[] {
  mkdirSync(dir, { recursive: true });
  return applets.map((a) => {
    const file = path.join(dir, fileNameOf(a));
    writeFileSync(file, `${JSON.stringify(a, null, 2)}\n`);
    return file;
  });
}

/** Every *.json in the folder, each one applet (or an array, as a whole export is). */
export function readDir(dir: string): { file: string; applet: unknown }[] {
  if (!existsSync(dir)) throw new CliError(`no folder ${dir}`, EXIT.usage);
  const files = readdirSync(dir).filter((f) => f.endsWith(".json")).sort();
  if (!files.length) throw new CliError(`${dir} holds no .json files`, EXIT.usage);
  const out: { file: string; applet: unknown }[] = [];
  const problems: { path: string; message: string }[] = [];
  for (const f of files) {
    const file = path.join(dir, f);
    try {
      const parsed = JSON.parse(readFileSync(file, "utf8")) as unknown;
      for (const applet of Array.isArray(parsed) ? parsed : [parsed]) out.push({ file, applet });
    } catch (err) {
      problems.push({ path: file, message: `not JSON: ${(err as Error).message}` });
    }
  }
  if (problems.length) throw new CliError(`${problems.length} file(s) could not be read; nothing was imported`, EXIT.refused, problems);
  return out;
}

export type Change = { file: string; id: string; name: string; change: "new" | "changed" | "unchanged" };

/** What importing these files would do to what the server has now. Pure. */
export function planImport(files: { file: string; applet: unknown }[], current: ExportedApplet[]): Change[] {
  const byId = new Map(current.map((a) => [a.id, a]));
  return files.map(({ file, applet }) => {
    const a = (applet ?? {}) as Partial<ExportedApplet>;
    const id = String(a.id ?? "");
    const now = byId.get(id);
    const change = !now ? "new" : same(now, a) ? "unchanged" : "changed";
    return { file, id, name: String(a.name ?? ""), change };
  });
}

/** Equal as the server would store them (key order and created_at do not count). */
function same(a: Partial<ExportedApplet>, b: Partial<ExportedApplet>): boolean {
  const norm = (x: Partial<ExportedApplet>) => canonical({ name: x.name, enabled: x.enabled ?? true, webhook_token: x.webhook_token, definition: x.definition });
  return norm(a) === norm(b);
}

function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  if (v && typeof v === "object") {
    return `{${Object.keys(v)
      .filter((k) => (v as Record<string, unknown>)[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(v);
}

/** The server names a problem by position in what was sent (`2.definition.trigger…`): name the file instead. */
export function problemsByFile(problems: { path: string; message: string }[], sent: { file: string }[]): { path: string; message: string }[] {
  return problems.map((p) => {
    const m = /^(\d+)(?:\.(.*))?$/.exec(p.path);
    const file = m ? sent[Number(m[1])]?.file : undefined;
    return file ? { path: m![2] ? `${file}: ${m![2]}` : file, message: p.message } : p;
  });
}
