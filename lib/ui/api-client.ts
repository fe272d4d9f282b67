import { hc, type InferResponseType } from "hono/client";
import type { ApiRoutes } from "@/lib/api";
import type { ApiError } from "@/lib/api/http";

/**
 * The browser's client of the session API, typed from the routes themselves (lib/api/routes/*):
 * a request body or an answer that the route does not have is a type error here, not a surprise
 * at run time. Relative URLs: it runs on the page's own origin, with its cookie.
 */
export const api = hc<ApiRoutes>("/");

export type { ApiError, InferResponseType };

/** The body of a refused request (the API's error shape), whatever the status; {} when there is none. */
export async function errorBody(res: Response): Promise<Partial<ApiError>> {
  const body: unknown = await res.json().catch(() => null);
  return body && typeof body === "object" ? (body) : {};
}
