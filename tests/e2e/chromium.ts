import { existsSync } from "node:fs";
import os from "node:os";
import path from "node:path";

/**
 * Where the browser tests find Chromium: `CHROMIUM_PATH` when set, else the first of the usual
 * install locations that exists (Debian/Ubuntu packages and snap, Homebrew and the macOS app
 * bundles). Never downloads a browser (`playwright install` is not used here).
 */
export const CHROMIUM_CANDIDATES = [
  "/usr/bin/chromium",
  "/usr/bin/chromium-browser",
  "/snap/bin/chromium",
  "/usr/bin/google-chrome",
  "/usr/bin/google-chrome-stable",
  "/opt/homebrew/bin/chromium",
  "/usr/local/bin/chromium",
  "/Applications/Chromium.app/Contents/MacOS/Chromium",
  "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
  path.join(os.homedir(), "Applications/Chromium.app/Contents/MacOS/Chromium"),
];

export function findChromium(env: Record<string, string | undefined> = process.env, exists: (p: string) => boolean = existsSync): { path: string | null; reason: string } {
  const given = env.CHROMIUM_PATH;
  if (given) {
    return exists(given)
      ? { path: given, reason: "" }
      : { path: null, reason: `CHROMIUM_PATH=${given} does not exist: point it at a Chromium or Chrome binary to run the browser tests` };
  }
  const found = CHROMIUM_CANDIDATES.find((p) => exists(p));
  if (found) return { path: found, reason: "" };
  return {
    path: null,
    reason: `no Chromium found (looked in ${CHROMIUM_CANDIDATES.slice(0, 3).join(", ")}, …): install it (Debian/Ubuntu: apt-get install -y chromium; macOS: brew install --cask chromium) or set CHROMIUM_PATH to run the browser tests`,
  };
}
