import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, test } from "vitest";
import { checkDefinition } from "@/lib/definition";
import { triggerRegistry } from "@/lib/triggers";

/**
 * Every definition in fixtures/applets: the valid ones (one per trigger type) parse, the invalid
 * ones fail naming the offending key. A fixture is "invalid" when its file name starts so.
 */
const DIR = path.resolve(__dirname, "../../fixtures/applets");
const files = readdirSync(DIR).filter((f) => f.endsWith(".json")).sort();
const load = (f: string): unknown => JSON.parse(readFileSync(path.join(DIR, f), "utf8"));
const valid = files.filter((f) => !f.startsWith("invalid"));
const invalid = files.filter((f) => f.startsWith("invalid"));

describe("definition fixtures", () => {
  test("there is one valid fixture per registered trigger type, and at least one invalid one", () => {
    const types = valid.map((f) => (load(f) as { trigger: { type: string } }).trigger.type).sort();
    expect(types).toEqual([...triggerRegistry.keys()].sort());
    expect(invalid.length).toBeGreaterThan(0);
  });

  test.each(valid)("%s parses", (f) => {
    const r = checkDefinition(load(f));
    expect(r.ok ? [] : r.problems).toEqual([]);
  });

  test("invalid-unknown-key.json fails with the unknown key and its path named", () => {
    const r = checkDefinition(load("invalid-unknown-key.json"));
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.problems).toEqual([{ path: "trigger.config", message: "unknown key: poll_every" }]);
  });
});
