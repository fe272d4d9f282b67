/**
 * SHA-256 for run ids, from @noble/hashes (audited, no dependencies, plain JavaScript: no Node
 * API, so the core still runs on Workers). Synchronous on purpose: crypto.subtle.digest is
 * asynchronous and measured here ~10× slower per id (one await per step of every event), and
 * node:crypto is not available on every runtime. Measured on run-id keys: @noble/hashes
 * ~165–210k digests/s against ~350–650k for the hand-written one it replaced (same bytes out),
 * several times what the planner needs.
 */
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils.js";

/** The SHA-256 of the UTF-8 bytes of `text`, as 64 lowercase hex digits. */
export function sha256Hex(text: string): string {
  return bytesToHex(sha256(utf8ToBytes(text)));
}
