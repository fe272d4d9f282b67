import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";

/**
 * AES-256-GCM with a random 12-byte IV per value and the secret's name as associated data, so a
 * ciphertext copied onto another name's row fails authentication instead of decrypting.
 * Stored as `v1:<iv>:<tag>:<ciphertext>`, each base64url.
 */
export function encryptSecret(key: Buffer, name: string, value: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", key, iv);
  cipher.setAAD(Buffer.from(name));
  const body = Buffer.concat([cipher.update(value, "utf8"), cipher.final()]);
  return ["v1", iv.toString("base64url"), cipher.getAuthTag().toString("base64url"), body.toString("base64url")].join(":");
}

export function decryptSecret(key: Buffer, name: string, stored: string): string {
  const [version, iv, tag, body] = stored.split(":");
  if (version !== "v1" || !iv || !tag || body === undefined) throw new Error(`secrets: "${name}" has an unknown format`);
  const decipher = createDecipheriv("aes-256-gcm", key, Buffer.from(iv, "base64url"));
  decipher.setAAD(Buffer.from(name));
  decipher.setAuthTag(Buffer.from(tag, "base64url"));
  try {
    return Buffer.concat([decipher.update(Buffer.from(body, "base64url")), decipher.final()]).toString("utf8");
  } catch (err) {
    throw new Error(`secrets: "${name}" failed authentication (wrong SECRETS_KEY or tampered value)`, { cause: err });
  }
}

export const SECRET_NAME = /^[A-Z0-9_]+$/;
