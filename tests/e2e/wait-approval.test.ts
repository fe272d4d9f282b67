import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { e2eSuite, hasChromium, screenshot, SCREENSHOTS, signedInPage, SKIP_REASON } from "./harness";

/**
 * In a real browser against the real app: an applet emails an approval link (to the outbox, as
 * development does), waits for the decision, then calls a service. The link is opened from the
 * .eml, the page says what is asked, one click approves, and the run page shows the run finished.
 * Screenshots at 1280 and 390 px.
 */
if (!hasChromium) console.warn(`tests/e2e/wait-approval.test.ts skipped: ${SKIP_REASON}`);

// A time of the run's day reads as a clock time, another day's with its date: a run parked at 22:25
// with a 2 h timeout times out "2026-12-07 00:25", so the words must allow for either.
const CLOCK = String.raw`(?:\d{4}-\d\d-\d\d )?\d\d:\d\d`;
const WAITING_WORDS = String.raw`aiting for approval — sent to ops@example\.com at ${CLOCK}, times out ${CLOCK}`;
/** The text of an .eml's parts with quoted-printable undone (soft breaks, =XX). */
const decoded = (eml: string) => eml.replace(/=\r?\n/g, "").replace(/=([0-9A-F]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16)));

describe.skipIf(!hasChromium)("a run that waits for an approval", () => {
  const s = e2eSuite({ fake: true });

  const both = async (page: Page, name: string) => {
    for (const width of [1280, 390]) {
      await page.setViewportSize({ width, height: width === 1280 ? 900 : 844 });
      await page.waitForTimeout(300);
      await screenshot(page, `${name}${width === 1280 ? "" : "-390"}`);
    }
    await page.setViewportSize({ width: 1280, height: 900 });
  };

  it("the emailed approve link opens a page that asks, one click approves, and the run finishes", async () => {
    const { page, errors } = await signedInPage(s.browser, s.app);
    const created = await page.request.post("/api/applets", {
      headers: { origin: s.app.url },
      data: {
        name: "Post the draft when approved",
        definition: {
          version: 2,
          trigger: { type: "webhook", config: {} },
          steps: [
            { id: "ask", type: "email", config: { to: "ops@example.com", subject: "Approve: {{trigger.body.title}}", body_markdown: "Approve: {{run.approve_url}}\n\nDeny: {{run.deny_url}}" } },
            { id: "approval", type: "wait", kind: "for_approval", message: "Post the draft “{{trigger.body.title}}” to the blog?", timeout: "2h" },
            { id: "post", type: "http", config: { url: s.fake.url("/ok/post"), method: "POST", body: { title: "{{trigger.body.title}}", decided: "{{steps.approval.output.resolution}}" } } },
          ],
        },
      },
    });
    expect(created.status(), await created.text()).toBe(201);
    const applet = ((await created.json()) as { applet: { id: string; webhook_url: string } }).applet;
    const hook = await fetch(applet.webhook_url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ title: "Spring sale" }) });
    expect(hook.status).toBeLessThan(300);

    // The email lands in the outbox with the links.
    const outbox = path.join(s.app.dataDir, "outbox");
    let eml = "";
    for (let i = 0; i < 240 && !eml; i++) {
      const files = (() => {
        try {
          return readdirSync(outbox).filter((f) => f.endsWith(".eml"));
        } catch {
          return [];
        }
      })();
      if (files.length) eml = decoded(readFileSync(path.join(outbox, files[0]!), "utf8"));
      else await new Promise((r) => setTimeout(r, 250));
    }
    const approve = /https?:\/\/[^\s"<>)]+\/approve/.exec(eml)?.[0];
    expect(approve, eml.slice(0, 2000)).toBeTruthy();

    // The run page while it waits: what it waits for, Resume now and Cancel.
    const runs = (await (await page.request.get(`/api/runs?applet_id=${applet.id}`)).json()) as { runs: { id: string; status: string }[] };
    const runId = runs.runs[0]!.id;
    // Next's development server compiles the run page on its first request: on a loaded machine that takes minutes.
    await page.goto(`/runs/${runId}`, { timeout: 300_000 });
    await expect.poll(async () => page.getByTestId("run-status").textContent(), { timeout: 60_000 }).toBe("waiting");
    await page.getByTestId("waiting-summary").waitFor();
    // Where the link went and when, read from the email step's rendered input.
    expect(await page.getByTestId("waiting-summary").textContent()).toMatch(new RegExp(`^W${WAITING_WORDS}$`));
    // The journal's wait step reads waiting (not running), with what it waits for.
    const waitRow = page.getByTestId("step-2");
    expect(await waitRow.getByTestId("step-2-status").textContent()).toBe("waiting");
    expect(await waitRow.getByTestId("step-2-why").textContent()).toMatch(new RegExp(`^W${WAITING_WORDS}$`));
    expect(await page.getByTestId("step-1-status").textContent()).toBe("succeeded");
    await both(page, "wait-run-waiting");

    // The runs list says the same in the run's reason cell.
    await page.goto(`/runs?applet_id=${applet.id}`, { timeout: 300_000 });
    const row = page.locator(`tr[data-run-id="${runId}"]`);
    await row.waitFor();
    expect(await row.textContent()).toMatch(new RegExp(`w${WAITING_WORDS}`));
    await both(page, "wait-runs-list");

    // A link preview's GET decides nothing; the page asks for one click.
    const preview = await fetch(approve!, { headers: { accept: "text/html" } });
    expect(preview.status).toBe(200);
    const link = await s.browser.newPage({ viewport: { width: 1280, height: 900 } });
    await link.goto(approve!, { waitUntil: "load" });
    expect(await link.locator("blockquote").textContent()).toBe("Post the draft “Spring sale” to the blog?");
    await both(link, "wait-approval-page");
    await link.getByRole("button", { name: "Approve" }).click();
    await link.waitForLoadState("load");
    expect(await link.locator("h1").textContent()).toBe("Approved");
    await both(link, "wait-approval-done");
    // The second click is told it was decided.
    await link.goto(approve!, { waitUntil: "load" });
    expect(await link.locator("h1").textContent()).toBe("Already decided");

    await page.goto(`/runs/${runId}`);
    await expect.poll(async () => page.getByTestId("run-status").textContent(), { timeout: 60_000 }).toBe("succeeded");
    await page.waitForTimeout(300);
    await both(page, "wait-run-finished");
    const posted = s.fake.received.filter((r) => r.path === "/ok/post");
    expect(posted).toHaveLength(1);
    expect(JSON.parse(posted[0]!.body)).toEqual({ title: "Spring sale", decided: "approved" });
    expect(errors).toEqual([]);
    await link.close();
    expect(SCREENSHOTS).toBeTruthy();
  }, 900_000);

  it("the Slack action's form offers Approve and Deny buttons, and a save without a for_approval wait after it is refused at that box", async () => {
    const { page, errors } = await signedInPage(s.browser, s.app);
    const created = await page.request.post("/api/applets", {
      headers: { origin: s.app.url },
      data: {
        name: "Ask in Slack",
        definition: {
          version: 2,
          trigger: { type: "webhook", config: {} },
          steps: [
            { id: "ask", type: "slack", config: { webhook_url: "{{secrets.SLACK_WEBHOOK}}", text: "Post “{{trigger.body.title}}”?", approval_buttons: true } },
            { id: "approval", type: "wait", kind: "for_approval", timeout: "2h" },
          ],
        },
      },
    });
    expect(created.status(), await created.text()).toBe(201);
    const id = ((await created.json()) as { applet: { id: string } }).applet.id;
    // Without the wait after it, the API names the field.
    const refused = await page.request.post("/api/applets", {
      headers: { origin: s.app.url },
      data: { name: "No wait", definition: { version: 2, trigger: { type: "webhook", config: {} }, steps: [{ id: "ask", type: "slack", config: { webhook_url: "{{secrets.SLACK_WEBHOOK}}", text: "x", approval_buttons: true } }] } },
    });
    expect(refused.status()).toBe(400);
    expect(await refused.text()).toContain("steps.0.config.approval_buttons");

    await page.goto(`/applets/${id}`, { timeout: 300_000 });
    const box = page.getByRole("checkbox", { name: "Approve and Deny buttons" });
    await box.waitFor({ timeout: 120_000 });
    expect(await box.isChecked()).toBe(true);
    await box.scrollIntoViewIfNeeded();
    for (const width of [1280, 390]) {
      await page.setViewportSize({ width, height: width === 1280 ? 900 : 844 });
      await page.waitForTimeout(300);
      await page.getByTestId("step-ask").screenshot({ path: path.join(SCREENSHOTS, `wait-slack-buttons-field${width === 1280 ? "" : "-390"}.png`) });
    }
    await page.setViewportSize({ width: 1280, height: 900 });
    expect(errors).toEqual([]);
  }, 900_000);
});
