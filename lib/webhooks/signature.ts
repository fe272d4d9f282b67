import { z } from "zod";
import { PRESETS, VERIFY_PRESETS, verifyRequest, type Headers, type VerifyPreset, type VerifyResult } from "./verify";

/**
 * A signature check as a config says it: the webhook trigger's fields (`verify`, `hmac_secret`,
 * `secret_header`, `tolerance_seconds`), which a `for_call` wait step's `signature` repeats, so a
 * sender set up for one is set up for the other. One check for both (verify.ts does the
 * cryptography): the secret rendered (a `{{secrets.NAME}}` reference), then the preset's verdict.
 */
export interface SignatureConfig {
  verify?: VerifyPreset;
  hmac_secret?: string;
  secret_header?: string;
  tolerance_seconds?: number;
}

/** The fields' own checks, shared with the webhook trigger's config (which adds its editor's labels). */
export const signatureFields = {
  verify: z.enum(VERIFY_PRESETS, { error: () => `must be one of ${VERIFY_PRESETS.filter((p) => p !== "none").join(", ")}` }),
  secret_header: z.string().trim().min(1).max(100),
  hmac_secret: z.string().min(1).max(500),
  tolerance_seconds: z.number().int().min(1).max(86_400),
};

/** What a config with a check needs besides its preset: a secret, and for the generic HMAC its header. */
export function signatureProblems(c: SignatureConfig, preset: VerifyPreset): { path: string; message: string }[] {
  const out: { path: string; message: string }[] = [];
  if (preset !== "none" && !c.hmac_secret) out.push({ path: "hmac_secret", message: `${PRESETS[preset].label} needs a secret` });
  if (preset === "hmac" && !c.secret_header) out.push({ path: "secret_header", message: "the HMAC check needs the header that carries the signature" });
  return out;
}

/**
 * A wait step's `signature`: a preset is required (a check of nothing is no check), with the secret
 * and what the preset needs, each problem named by its field.
 */
export const waitSignatureSchema = z
  .strictObject({
    verify: signatureFields.verify.refine((p) => p !== "none", { message: `"none" checks nothing: leave signature out, or pick one of ${VERIFY_PRESETS.filter((p) => p !== "none").join(", ")}` }),
    // Named, never written in: the webhook trigger's field is a credential the editor masks and an
    // export leaves out, and a wait step has no such field, so its secret must be a reference.
    hmac_secret: signatureFields.hmac_secret
      .refine((v) => /\{\{\s*secrets\.[A-Za-z0-9_]+\s*\}\}/.test(v), {
        message: "must name a stored secret, such as {{secrets.GITHUB_WEBHOOK_SECRET}}: a secret written here would be kept in the applet, its versions and its exports",
      })
      .optional(),
    secret_header: signatureFields.secret_header.optional(),
    tolerance_seconds: signatureFields.tolerance_seconds.optional(),
  })
  .superRefine((c, ctx) => {
    for (const p of signatureProblems(c, c.verify)) ctx.addIssue({ code: "custom", path: [p.path], message: p.message });
  });

/**
 * Checks a request against a config's preset. `render` resolves the secret's template
 * (`{{secrets.NAME}}`); a secret that renders empty (a deleted secret) refuses everything.
 */
export function checkSignature(
  preset: VerifyPreset,
  c: SignatureConfig,
  req: { rawBody: Buffer; headers: Headers },
  render: (template: string) => string,
  nowMs: number,
): VerifyResult {
  if (preset === "none") return { ok: true };
  const secret = c.hmac_secret ? render(c.hmac_secret) : "";
  if (!secret) return { ok: false, reason: "its secret is empty (a deleted secret?)" };
  return verifyRequest(preset, { rawBody: req.rawBody, headers: req.headers, secret, header: c.secret_header, toleranceSeconds: c.tolerance_seconds, nowMs });
}
