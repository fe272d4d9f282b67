import { UserError } from "../core/errors";
import { parseJsonBounded } from "../core/json";
import { LIMITS } from "../core/limits";
import { readRequestBody } from "../http/body";

/** Small helpers shared by the API handlers (Web Request/Response, no framework). */
export const json = (body: unknown, status = 200, headers: Record<string, string> = {}): Response =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", "cache-control": "no-store", ...headers } });

export const notFound = (what = "not found"): Response => json({ error: what }, 404);

/** The request's JSON body ({} when empty); over `maxBytes` it is refused (413) before more is read. */
export async function readJson(req: Request, maxBytes: number = LIMITS.apiBodyBytes): Promise<unknown> {
  const text = (await readRequestBody(req, maxBytes)).toString("utf8");
  if (!text.trim()) return {};
  const parsed = parseJsonBounded(text);
  if (!parsed.ok) throw new UserError(`request body: ${parsed.reason}`, [{ path: "", message: parsed.reason }]);
  return parsed.value;
}

export function asObject(value: unknown, what: string): Record<string, unknown> {
  if (!value || typeof value !== "object" || Array.isArray(value)) throw new UserError(`${what} must be a JSON object`, [{ path: "", message: "expected an object" }]);
  return value as Record<string, unknown>;
}

export interface Route {
  method: string;
  /** `/api/applets/:id`: `:name` segments become params. */
  pattern: string;
  /** Reachable without a session (setup, login). */
  public?: boolean;
  handler(req: Request, params: Record<string, string>, url: URL): Promise<Response> | Response;
}

export interface CompiledRoute extends Route {
  regex: RegExp;
  keys: string[];
}

export function compile(route: Route): CompiledRoute {
  const keys: string[] = [];
  const source = route.pattern
    .split("/")
    .map((seg) => (seg.startsWith(":") ? (keys.push(seg.slice(1)), "([^/]+)") : seg.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
    .join("/");
  return { ...route, regex: new RegExp(`^${source}/?$`), keys };
}
