import { createHmac, timingSafeEqual } from "node:crypto";

/**
 * A run's resume and approval links. Each wait a run reaches is its n-th (`seq`); its links carry
 * an HMAC of the run id and that number under the app's secret, so they exist before the wait is
 * reached (an earlier step hands them on), cannot be guessed, and need no row until used. A link
 * is good for its one wait: once that wait is resolved, the same link is told so.
 */
export const WAIT_PATH = "/api/waits/";

export function waitMac(secret: string, runId: string, seq: number): string {
  return createHmac("sha256", secret).update(`whenthen wait\0${runId}\0${seq}`).digest("base64url").slice(0, 32);
}

export interface WaitLinks {
  resume_url: string;
  approve_url: string;
  deny_url: string;
}

export function waitLinks(publicUrl: string, secret: string, runId: string, seq: number): WaitLinks {
  const base = `${publicUrl}${WAIT_PATH}${encodeURIComponent(runId)}/${seq}/${waitMac(secret, runId, seq)}`;
  return { resume_url: base, approve_url: `${base}/approve`, deny_url: `${base}/deny` };
}

export interface WaitAddress {
  runId: string;
  seq: number;
  /** `resume` for the resume URL itself. */
  action: "resume" | "approve" | "deny";
}

/** The wait a path names, when its MAC is right; null for anything else (answered as not found). */
export function parseWaitPath(pathname: string, secret: string): WaitAddress | null {
  if (!pathname.startsWith(WAIT_PATH)) return null;
  const parts = pathname.slice(WAIT_PATH.length).split("/");
  if (parts.length < 3 || parts.length > 4) return null;
  const [rawRun, rawSeq, mac, action = "resume"] = parts as [string, string, string, string?];
  if (!/^\d{1,4}$/.test(rawSeq) || (action !== "resume" && action !== "approve" && action !== "deny")) return null;
  let runId: string;
  try {
    runId = decodeURIComponent(rawRun);
  } catch {
    return null;
  }
  const seq = Number(rawSeq);
  const want = Buffer.from(waitMac(secret, runId, seq));
  const got = Buffer.from(mac);
  if (want.length !== got.length || !timingSafeEqual(want, got)) return null;
  return { runId, seq, action: action === "resume" && parts.length === 4 ? "resume" : (action) };
}
