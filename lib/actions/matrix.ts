import { createHash } from "node:crypto";
import { z } from "zod";
import { ActionError } from "../core/errors";
import type { SafeResponse } from "../net/types";
import { field } from "../plugin";
import { clampRetryAfter, hasTemplate, isRetryableStatus, isSuccess, parseJsonObject, requireHttpUrl, requireRendered, requiredText, statusError, urlField } from "./common";
import type { ActionContext, ActionPlugin } from "./types";

/**
 * Sends a message to a Matrix room (client-server API v3, `PUT …/rooms/<room>/send/m.room.message/<txnId>`)
 * as the account whose access token it holds; the account must have joined the room.
 *
 * The transaction id is derived from the run's idempotency key, so a retry of the same step (a
 * lost answer, a worker that stopped) sends the same transaction and the homeserver posts it once.
 * A room alias (#room:server) is resolved to its id first. 429 waits as long as Matrix asks
 * (`retry_after_ms`); 5xx is retried; M_FORBIDDEN (not in the room), M_UNKNOWN_TOKEN and other 4xx
 * fail at once with Matrix's words.
 */

const ROOM = /^[!#][^:\s]+:[A-Za-z0-9.-]+(?::\d+)?$/;

const roomProblem = (v: string): string | null =>
  ROOM.test(v.trim()) ? null : `matrix: "room" must be a room id (!abc123:example.org) or alias (#family:example.org), got ${JSON.stringify(v.slice(0, 60))}`;

export const matrixConfigSchema = z.strictObject({
  homeserver: field(urlField("matrix", "homeserver"), { label: "Homeserver", kind: "text", required: true, placeholder: "https://matrix.example.org", help: "The client API address of the account's server (matrix.org: https://matrix-client.matrix.org)." }),
  access_token: field(requiredText("matrix", "access_token"), {
    label: "Access token",
    kind: "secret",
    required: true,
    template: true,
    placeholder: "{{secrets.MATRIX_TOKEN}}",
    help: "A bot account's token (Element: Settings → Help & About → Access token). Store it as a secret.",
  }),
  room: field(
    requiredText("matrix", "room").superRefine((v, ctx) => {
      const problem = hasTemplate(v) ? null : roomProblem(v);
      if (problem) ctx.addIssue({ code: "custom", message: problem });
    }),
    { label: "Room", kind: "text", required: true, template: true, placeholder: "!abc123:example.org", help: "The room id (Room settings → Advanced) or an alias; the account must have joined it." },
  ),
  text: field(requiredText("matrix", "text"), { label: "Message", kind: "textarea", required: true, template: true }),
  notice: field(z.boolean().optional(), { label: "Send as a notice", kind: "boolean", help: "Shown dimmed, as bots' messages usually are; other bots ignore notices." }),
});
export type MatrixConfig = z.output<typeof matrixConfigSchema>;

/** The transaction id of a step: the same on every retry of it, so the homeserver posts it once. */
export const matrixTxnId = (idempotencyKey: string): string => `whenthen-${createHash("sha256").update(idempotencyKey).digest("hex").slice(0, 32)}`;

export const matrixAction: ActionPlugin<MatrixConfig> = {
  type: "matrix",
  label: "Matrix message",
  description: "Send a message to a Matrix room (Element and every other client) as your bot account.",
  configSchema: matrixConfigSchema,
  alert: { label: "Matrix", messageFields: ["text"], fill: (msg) => ({ text: `${msg.title}\n${msg.text}` }) },
  urlFields: ["homeserver"],
  exampleConfig: { homeserver: "https://matrix.example.org", access_token: "{{secrets.MATRIX_TOKEN}}", room: "!abc123:example.org", text: "New order: {{trigger.body.title}}" },

  // An alias is resolved by the homeserver: the dry run names the room it would post to by the alias.
  dryRunAnswer: ({ url }) => {
    const alias = /\/directory\/room\/([^/?]+)/.exec(url)?.[1];
    return { status: 200, headers: { "content-type": "application/json" }, body: JSON.stringify(alias ? { room_id: `(the room of ${decodeURIComponent(alias)})` } : {}) };
  },
  async run(config, ctx) {
    const token = requireRendered("matrix", "access_token", config.access_token).trim();
    ctx.secret(token);
    const base = requireHttpUrl("matrix", "homeserver", config.homeserver).replace(/\/+$/, "");
    const room = requireRendered("matrix", "room", config.room).trim();
    const problem = roomProblem(room);
    if (problem) throw new ActionError(problem, { retryable: false });
    const text = requireRendered("matrix", "text", config.text);
    const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" };
    const roomId = room.startsWith("#") ? await resolveAlias(base, room, headers, ctx) : room;
    const txnId = matrixTxnId(ctx.idempotencyKey);
    const res = await ctx.http(`${base}/_matrix/client/v3/rooms/${encodeURIComponent(roomId)}/send/m.room.message/${encodeURIComponent(txnId)}`, {
      method: "PUT",
      headers,
      body: JSON.stringify({ msgtype: config.notice ? "m.notice" : "m.text", body: text }),
    });
    const answer = parseJsonObject(res);
    if (!isSuccess(res.status)) throw matrixError(res, answer, ctx, roomId);
    return { output: { status: res.status, room_id: roomId, event_id: typeof answer?.event_id === "string" ? answer.event_id : null, txn_id: txnId } };
  },
};

async function resolveAlias(base: string, alias: string, headers: Record<string, string>, ctx: ActionContext): Promise<string> {
  const res = await ctx.http(`${base}/_matrix/client/v3/directory/room/${encodeURIComponent(alias)}`, { headers });
  const answer = parseJsonObject(res);
  if (!isSuccess(res.status)) throw matrixError(res, answer, ctx, alias);
  if (typeof answer?.room_id !== "string") throw new ActionError(`matrix: the homeserver answered the alias ${alias} without a room id`, { retryable: false });
  return answer.room_id;
}

function matrixError(res: SafeResponse, answer: Record<string, unknown> | null, ctx: ActionContext, room: string): ActionError {
  const code = typeof answer?.errcode === "string" ? answer.errcode : "";
  const said = typeof answer?.error === "string" ? answer.error : "";
  const words = said ? `Matrix: ${code ? `${code} ` : ""}"${said}"` : code;
  if (res.status === 429) {
    const ms = typeof answer?.retry_after_ms === "number" ? clampRetryAfter(answer.retry_after_ms) : undefined;
    return statusError("matrix", res, ctx.clock, `rate limited${ms !== undefined ? `; Matrix asked to wait ${ms / 1000} s` : ""}`, ms);
  }
  const detail =
    code === "M_UNKNOWN_TOKEN" || res.status === 401
      ? `the access token was refused (logged out?); get a new one and update the secret (${words})`
      : code === "M_FORBIDDEN"
        ? `the account may not post in ${room}: invite it and accept the invite first (${words})`
        : code === "M_NOT_FOUND"
          ? `no room ${room} on this homeserver (${words})`
          : words || undefined;
  const err = statusError("matrix", res, ctx.clock, detail);
  return new ActionError(err.message, { retryable: isRetryableStatus(res.status), retryAfterMs: err.retryAfterMs, output: err.output });
}

export default matrixAction;
