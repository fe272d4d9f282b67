import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { checkDefinition } from "@/lib/definition";

/**
 * The examples in docs/definition.md are what users copy: each one is accepted as written. A
 * whole definition is checked as it is; a step, a list of steps or a `"controls": {…}` fragment
 * is checked inside the smallest definition that holds it.
 */
const doc = readFileSync("docs/definition.md", "utf8");
const examples = [...doc.matchAll(/```json\n([\s\S]*?)```/g)].map((m) => m[1]!);

function asDefinition(text: string): unknown {
  const trigger = { type: "webhook", config: {} };
  const value: unknown = JSON.parse(text.trim().startsWith('"') ? `{${text}}` : text);
  if (Array.isArray(value)) return { version: 2, trigger, steps: value };
  const object = value as Record<string, unknown>;
  if ("version" in object) return object;
  if ("controls" in object) return { version: 2, trigger, steps: [{ type: "http", config: { url: "https://example.com" } }], ...object };
  return { version: 2, trigger, steps: [object] };
}

describe("the examples in docs/definition.md", () => {
  it("there are examples to check", () => expect(examples.length).toBeGreaterThan(5));

  it.each(examples.map((text, i) => [i + 1, text.split("\n")[0]!.slice(0, 60), text] as const))("example %i (%s) is accepted as written", (_i, _head, text) => {
    const checked = checkDefinition(asDefinition(text));
    expect(checked.ok ? [] : checked.problems).toEqual([]);
  });
});
