import { createMiddleware } from "hono/factory";
import type { z } from "zod";
import { UserError } from "../core/errors";
import { LIMITS } from "../core/limits";
import type { Problem } from "../definition";
import { readJson } from "./http";
import type { ApiEnv } from "./env";

/**
 * A route's JSON body, read with lib/http/body.ts's byte cap and parseJsonBounded's depth and key
 * bounds, then checked against a zod schema; the handler reads it typed with `c.req.valid("json")`
 * and the typed client (`hc`) sees the input type. Not @hono/zod-validator: it reads the body
 * through `c.req.json()`, with no byte cap and no depth bound, and answers in its own shape.
 *
 * A refusal is a UserError: 400 with `{ error, problems: [{ path, message }] }`, every problem at
 * once, each naming its field, which is the shape the forms already show under their fields.
 */
export function jsonBody<S extends z.ZodType>(what: string, schema: S, maxBytes: number = LIMITS.apiBodyBytes) {
  return createMiddleware<ApiEnv, string, { in: { json: z.input<S> }; out: { json: z.output<S> } }>(async (c, next) => {
    const raw = await readJson(c.req.raw, maxBytes);
    const wantsObject = schema._zod.def.type === "object" || schema._zod.def.type === "record";
    if (wantsObject && (!raw || typeof raw !== "object" || Array.isArray(raw))) {
      throw new UserError(`${what} must be a JSON object`, [{ path: "", message: "expected an object" }]);
    }
    const parsed = schema.safeParse(raw);
    if (!parsed.success) {
      const problems = problemsOf(parsed.error);
      throw new UserError(`${what}: ${problems.map(sentence).join("; ")}`, problems);
    }
    c.req.addValidatedData("json", parsed.data as object);
    await next();
  });
}

/** zod issues as the API's problems: the field's path, and what to do in words. */
export function problemsOf(error: z.ZodError): Problem[] {
  return error.issues.map((issue) => {
    const path = issue.path.map(String).join(".");
    if (issue.code === "unrecognized_keys") return { path, message: `unknown key${issue.keys.length > 1 ? "s" : ""}: ${issue.keys.join(", ")}` };
    if (issue.code === "invalid_type" && /received undefined$/.test(issue.message)) return { path, message: `${path || "a value"} is required` };
    return { path, message: issue.message };
  });
}

/** "name: must be text" unless the message already names its field ("email is required"). */
const sentence = (p: Problem): string => (!p.path || p.message.startsWith(p.path.split(".").at(-1)!) ? p.message : `${p.path}: ${p.message}`);

/** A route's query string, checked against a zod schema of string fields; typed for `c.req.valid("query")` and the client. */
export function queryParams<S extends z.ZodType<Record<string, unknown>, Record<string, string | undefined>>>(what: string, schema: S) {
  return createMiddleware<ApiEnv, string, { in: { query: z.input<S> }; out: { query: z.output<S> } }>(async (c, next) => {
    const parsed = schema.safeParse(c.req.query());
    if (!parsed.success) {
      const problems = problemsOf(parsed.error);
      throw new UserError(`${what}: ${problems.map(sentence).join("; ")}`, problems);
    }
    c.req.addValidatedData("query", parsed.data);
    await next();
  });
}

/** A route's path parameters, checked against a zod schema of string fields (a version number, say); typed for `c.req.valid("param")` and the client. */
export function pathParams<S extends z.ZodType<Record<string, unknown>, Record<string, string>>>(what: string, schema: S) {
  return createMiddleware<ApiEnv, string, { in: { param: z.input<S> }; out: { param: z.output<S> } }>(async (c, next) => {
    const parsed = schema.safeParse(c.req.param());
    if (!parsed.success) {
      const problems = problemsOf(parsed.error);
      throw new UserError(`${what}: ${problems.map(sentence).join("; ")}`, problems);
    }
    c.req.addValidatedData("param", parsed.data);
    await next();
  });
}
