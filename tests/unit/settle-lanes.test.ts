import { describe, expect, test } from "vitest";
import { createLanes } from "@/lib/db/store/postgres/settles";

/** A send whose batches are answered when the test says (`answer`), recording what each held. */
function controlledSend() {
  const batches: string[][] = [];
  const pending: { resolve: (o: string[]) => void; reject: (e: Error) => void; items: string[] }[] = [];
  const send = (items: string[]) =>
    new Promise<string[]>((resolve, reject) => {
      batches.push(items);
      pending.push({ resolve, reject, items });
    });
  const answer = async (fail?: Error) => {
    const p = pending.shift()!;
    if (fail) p.reject(fail);
    else p.resolve(p.items.map((i) => `done ${i}`));
    await new Promise((r) => setImmediate(r));
  };
  return { send, batches, answer };
}

describe("a worker's settles, group-committed (lib/db/store/postgres/settles.ts)", () => {
  test("one batch in flight per key; what comes meanwhile goes together in the next; each item gets its own result", async () => {
    const { send, batches, answer } = controlledSend();
    const lanes = createLanes(send);
    const a = lanes.push("w1", "a");
    const b = lanes.push("w1", "b");
    const c = lanes.push("w1", "c");
    const other = lanes.push("w2", "x");
    // a went at once, alone; w2's lane is its own.
    expect(batches).toEqual([["a"], ["x"]]);
    await answer();
    expect(await a).toBe("done a");
    expect(batches).toEqual([["a"], ["x"], ["b", "c"]]);
    await answer();
    expect(await other).toBe("done x");
    await answer();
    expect([await b, await c]).toEqual(["done b", "done c"]);
    // The lane is empty again: the next item goes at once.
    const d = lanes.push("w1", "d");
    expect(batches.at(-1)).toEqual(["d"]);
    await answer();
    expect(await d).toBe("done d");
  });

  test("a batch that fails rejects its own items only, and the items that waited behind it still go", async () => {
    const { send, batches, answer } = controlledSend();
    const lanes = createLanes(send);
    const a = lanes.push("w1", "a");
    const b = lanes.push("w1", "b");
    const failed = expect(a).rejects.toThrow("the database refused");
    await answer(new Error("the database refused"));
    await failed;
    expect(batches).toEqual([["a"], ["b"]]);
    await answer();
    expect(await b).toBe("done b");
  });
});
