import { describe, expect, test } from "vitest";
import { authorOf, authorText, canonicalJson, changeSummary, versionDiff, type VersionContent } from "@/lib/applets/versions";

const base: VersionContent = {
  name: "Ping",
  enabled: true,
  definition: { version: 1, trigger: { type: "webhook", config: {} }, actions: [{ type: "http", config: { url: "https://a.test/", method: "POST" } }] },
};
const withDefinition = (d: Record<string, unknown>, extra: Partial<VersionContent> = {}): VersionContent => ({ ...base, ...extra, definition: { ...base.definition, ...d } });
const save = (v: VersionContent) => ({ ...v, source: "save" as const });

describe("version summaries, diffs and authors", () => {
  test("a diff shows the changed field, with context, and folds the unchanged lines", () => {
    const newer = withDefinition({ actions: [{ type: "http", config: { url: "https://b.test/", method: "POST" } }] });
    const { lines, added, removed } = versionDiff(base, newer, 1);
    expect([added, removed]).toEqual([1, 1]);
    const changed = lines.filter((l) => l.kind === "add" || l.kind === "del").map((l) => ("text" in l ? `${l.kind} ${l.text.trim()}` : ""));
    expect(changed).toEqual(['del "url": "https://a.test/"', 'add "url": "https://b.test/"']);
    // One line of context each side, the rest folded into counted skips.
    const kinds = lines.map((l) => l.kind);
    expect(kinds[0]).toBe("skip");
    expect(kinds.at(-1)).toBe("skip");
    expect(kinds.filter((k) => k === "same")).toHaveLength(2);
    const del = lines.find((l) => l.kind === "del")!;
    const add = lines.find((l) => l.kind === "add")!;
    expect("oldNo" in del && del.oldNo).toBe("newNo" in add && add.newNo);
  });

  test("keys that only moved are no change; canonical JSON sorts keys at every level and keeps array order", () => {
    const reordered: VersionContent = { enabled: true, definition: { actions: base.definition.actions, trigger: { config: {}, type: "webhook" }, version: 1 }, name: "Ping" };
    expect(versionDiff(base, reordered).lines.every((l) => l.kind === "skip" || l.kind === "same")).toBe(true);
    expect(changeSummary(base, save(reordered))).toBe("No changes");
    expect(canonicalJson({ b: 1, a: [{ d: 1, c: 2 }, 3] })).toBe('{\n  "a": [\n    {\n      "c": 2,\n      "d": 1\n    },\n    3\n  ],\n  "b": 1\n}');
  });

  test("the one-line summary names what changed: name, enabled, trigger, filter, transform, each action, settings", () => {
    const first = { ...base, source: "create" as const };
    expect(changeSummary(null, first)).toBe("Created");
    expect(changeSummary(null, { ...base, source: "import" })).toBe("Imported");
    expect(changeSummary(base, save({ ...base, name: "Pong", enabled: false }))).toBe("Renamed to “Pong”; disabled");
    expect(changeSummary(base, save(withDefinition({ trigger: { type: "schedule", config: { cron: "0 9 * * *" } } })))).toBe("Trigger: webhook → schedule");
    expect(changeSummary(base, save(withDefinition({ filter: { code: "return true" } })))).toBe("Filter added");
    const two = withDefinition({ actions: [...(base.definition.actions as object[]), { type: "slack", config: { text: "hi" } }] });
    expect(changeSummary(base, save(two))).toBe("Action 2 (slack) added");
    expect(changeSummary(two, save(base))).toBe("Action 2 (slack) removed");
    expect(changeSummary(base, save(withDefinition({ actions: [{ type: "slack", config: {} }] })))).toBe("Action 1: http → slack");
    expect(changeSummary(base, save(withDefinition({ retry: { max_attempts: 2 }, timezone: "Europe/Paris" })))).toBe("Settings: retry, timezone");
    expect(changeSummary(base, { ...withDefinition({ actions: [{ type: "http", config: { url: "https://a.test/", method: "PUT" } }] }), source: "restore", restoredFrom: 1 })).toBe(
      "Restored version 1 (action 1 (http): method)",
    );
  });

  test("who saved: the API token when one was used, else the signed-in user", () => {
    expect(authorOf({ userId: "u1", email: "owner@example.com" })).toEqual({ kind: "user", id: "u1", label: "owner@example.com" });
    const viaToken = authorOf({ userId: "u1", email: "owner@example.com", token: { id: "t1", name: "deploy" } });
    expect(viaToken).toEqual({ kind: "token", id: "t1", label: "deploy" });
    expect(authorText(viaToken)).toBe("API token “deploy”");
    expect(authorOf(null)).toEqual({ kind: "system", id: null, label: "whenthen" });
  });
});
