import { UserError } from "../core/errors";
import { jsonResponse, parseJsonBounded } from "../core/json";
import { LIMITS } from "../core/limits";
import { readRequestBody } from "../http/body";

/** A JSON answer with the API's headers, for code outside a route (the request guard, auth refusals). */
export const json = jsonResponse;

/** The request's JSON body ({} when empty); over `maxBytes` it is refused (413) before more is read. */
export async function readJson(req: Request, maxBytes: number = LIMITS.apiBodyBytes): Promise<unknown> {
  const text = (await readRequestBody(req, maxBytes)).toString("utf8");
  if (!text.trim()) return {};
  const parsed = parseJsonBounded(text);
  if (!parsed.ok) throw new UserError(`request body: ${parsed.reason}`, [{ path: "", message: parsed.reason }]);
  return parsed.value;
}

/** What every refused request answers (400, 401, 403, 404, 413, 415, 429): the UI reads `error`, and `problems` per field. */
export interface ApiError {
  error: string;
  problems?: { path: string; message: string }[];
}
