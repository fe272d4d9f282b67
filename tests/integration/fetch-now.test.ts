import { http, HttpResponse } from "msw";
import { afterAll, describe, expect, test } from "vitest";
import { fetchProblemsInWords } from "@/components/editor/problems";
import { createApi } from "@/lib/api";
import { triggerRegistry } from "@/lib/triggers";
import { testIdentity } from "../helpers/auth";
import { createTestApp } from "../helpers/db";
import { server, useHttpMocks } from "../helpers/http";

/**
 * "Fetch now" in the editor checks only what the fetch reads: a value half-typed into "Check
 * every" (or any cadence field) never stops it, and what it refuses is said with the field's label.
 */
useHttpMocks();

const app = createTestApp({ start: "2026-03-07T12:00:00.000Z" });
afterAll(() => app.close());
const api = createApi({ app, applets: app.applets, auth: testIdentity(app) });

async function fetchNow(type: string, config: Record<string, unknown>) {
  const res = await api.handle(new Request("http://localhost/api/triggers/fetch", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ type, config }) }));
  return { status: res.status, body: (await res.json()) as { ok?: boolean; result?: { item_count?: number; value?: unknown }; error?: string; problems?: { path: string; message: string }[] } };
}

const FEED = `<?xml version="1.0"?><rss version="2.0"><channel><title>Field Notes</title>
<item><title>Irrigation</title><link>https://blog.example.test/1</link><guid>1</guid></item></channel></rss>`;

describe("Fetch now does not depend on fields it does not read", () => {
  test("an RSS feed is fetched while Check every is 1 (below its minimum of 5) and Most items per check is empty", async () => {
    server.use(http.get("https://blog.example.test/feed.xml", () => new HttpResponse(FEED, { headers: { "content-type": "application/rss+xml" } })));
    const { status, body } = await fetchNow("rss", { url: "https://blog.example.test/feed.xml", interval_min: 1, max_items_per_poll: "" });
    expect(status).toBe(200);
    expect(body).toMatchObject({ ok: true, result: { feed_title: "Field Notes", item_count: 1 } });
  });

  test("a JSON poll is fetched while its Check every is 0", async () => {
    server.use(http.get("https://api.example.test/price", () => HttpResponse.json({ data: { price: 42 } })));
    const { body } = await fetchNow("poll", { url: "https://api.example.test/price", path: "data.price", interval_min: 0 });
    expect(body).toMatchObject({ ok: true, result: { value: 42 } });
  });

  test("what it does refuse names the field by its label, not its config key", async () => {
    const { status, body } = await fetchNow("rss", { url: "ftp://blog.example.test/feed.xml", interval_min: 1 });
    expect(status).toBe(400);
    expect(body.problems).toEqual([{ path: "config.url", message: "must be an http or https URL" }]);
    const shown = fetchProblemsInWords("rss", triggerRegistry.get("rss")!.fields, body.problems!);
    expect(shown).toBe("Feed URL: must be an http or https URL");
    expect(shown).not.toMatch(/\burl\b|interval_min/);
  });
});
