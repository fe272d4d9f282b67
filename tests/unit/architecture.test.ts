import { createRequire } from "node:module";
import path from "node:path";
import { cruise, type ICruiseResult, type IViolation } from "dependency-cruiser";
import { describe, expect, test } from "vitest";

/**
 * The layers of lib/ (core → store → domain → edges → roots) and "no import circle" are written
 * down once, in .dependency-cruiser.cjs; this runs that check over lib/ as part of the suite, so a
 * new circle or an import running up a layer fails here with the rule and the two files named.
 */
const ROOT = path.resolve(import.meta.dirname, "../..");
const config = createRequire(import.meta.url)(path.join(ROOT, ".dependency-cruiser.cjs")) as { forbidden: unknown[]; options: Record<string, unknown> };

const describeViolation = (v: IViolation): string =>
  `${v.rule.name}: ${v.from} → ${v.to}${v.cycle?.length ? ` (circle: ${v.cycle.map((c) => c.name).join(" → ")})` : ""}`;

describe("the import layers of lib/", () => {
  test("no circle and no import from a lower layer to a higher one", { timeout: 120_000 }, async () => {
    const cwd = process.cwd();
    process.chdir(ROOT);
    try {
      const result = await cruise(["lib"], { ...config.options, ruleSet: { forbidden: config.forbidden }, validate: true } as never);
      const output = result.output as ICruiseResult;
      expect(output.summary.totalCruised).toBeGreaterThan(200);
      expect(output.summary.violations.map(describeViolation)).toEqual([]);
    } finally {
      process.chdir(cwd);
    }
  });
});
