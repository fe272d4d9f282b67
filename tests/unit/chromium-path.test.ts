import { describe, expect, test } from "vitest";
import { CHROMIUM_CANDIDATES, findChromium } from "../e2e/chromium";

describe("the browser tests find Chromium or say why they skip", () => {
  test("CHROMIUM_PATH wins over the usual locations", () => {
    const exists = (p: string) => p === "/opt/my/chrome" || p === "/usr/bin/chromium";
    expect(findChromium({ CHROMIUM_PATH: "/opt/my/chrome" }, exists)).toEqual({ path: "/opt/my/chrome", reason: "" });
  });

  test("without CHROMIUM_PATH the first usual location that exists is used (Ubuntu's chromium-browser, macOS app bundles)", () => {
    expect(findChromium({}, (p) => p === "/usr/bin/chromium-browser").path).toBe("/usr/bin/chromium-browser");
    expect(findChromium({}, (p) => p === "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome").path).toBe("/Applications/Google Chrome.app/Contents/MacOS/Google Chrome");
    expect(CHROMIUM_CANDIDATES[0]).toBe("/usr/bin/chromium");
  });

  test("none found: no path, and a reason that says how to install one or set CHROMIUM_PATH", () => {
    const none = findChromium({}, () => false);
    expect(none.path).toBeNull();
    expect(none.reason).toMatch(/apt-get install -y chromium/);
    expect(none.reason).toMatch(/CHROMIUM_PATH/);
    const wrong = findChromium({ CHROMIUM_PATH: "/nope/chrome" }, () => false);
    expect(wrong.path).toBeNull();
    expect(wrong.reason).toContain("CHROMIUM_PATH=/nope/chrome does not exist");
  });
});
