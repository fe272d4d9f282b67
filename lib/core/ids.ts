import { randomBytes, randomUUID } from "node:crypto";

export const newId = (): string => randomUUID();

/** Webhook tokens: 32 random bytes, base64url (spec: applets.webhook_token). */
export const newWebhookToken = (): string => randomBytes(32).toString("base64url");
