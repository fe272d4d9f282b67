import { mkdirSync } from "node:fs";
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { e2eSuite, hasChromium, screenshot, signedInPage, SKIP_REASON } from "./harness";

/**
 * The step editor in a real browser against the real app: "amount > 100 → Slack, otherwise email"
 * built with Add step, a condition from the ingredient picker and a number value, previewed on two
 * samples (the preview marks the branch each takes), saved, fired twice through the webhook, and
 * both runs' trees read on their pages. Slack is the local stand-in (ALLOW_PRIVATE_URLS=true); the
 * email goes to the outbox (no SMTP_URL).
 */
if (!hasChromium) console.warn(`tests/e2e/step-editor.test.ts skipped: ${SKIP_REASON}`);

const SHOTS = process.env.STEP_EDITOR_SHOTS;

/** Both widths, into tests/e2e/screenshots (and STEP_EDITOR_SHOTS when set, to look at). */
async function shots(page: Page, name: string): Promise<void> {
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: 900 });
    await page.waitForTimeout(300);
    await screenshot(page, `${name}-${width}`);
    if (SHOTS) {
      mkdirSync(SHOTS, { recursive: true });
      await page.screenshot({ path: `${SHOTS}/${name}-${width}.png`, fullPage: true });
    }
  }
  await page.setViewportSize({ width: 1280, height: 900 });
}

async function setAmount(page: Page, amount: number): Promise<void> {
  const sample = page.getByLabel("Sample (JSON)");
  if (!(await sample.isVisible())) await page.getByText("The sample as JSON (edit it to try other values)").click();
  const json = JSON.parse(await sample.inputValue()) as { body: Record<string, unknown> };
  json.body.amount = amount;
  await sample.fill(JSON.stringify(json, null, 2));
}

describe.skipIf(!hasChromium)("the step editor in a real browser", () => {
  const s = e2eSuite({ fake: true });

  it("builds amount > 100 → Slack, otherwise email, previews both samples, saves, and both runs show their tree", async () => {
    const { page, errors } = await signedInPage(s.browser, s.app);
    await page.getByRole("link", { name: "New applet" }).click();
    await page.waitForURL("**/applets/new");
    await page.getByTestId("trigger-card-webhook").click();

    // A simple applet is still trigger → action.
    await page.getByTestId("action-card-slack").waitFor();
    await shots(page, "step-editor-simple");

    // "Add step" → Only if: the applet becomes a step list; the action still being picked goes.
    await page.getByRole("button", { name: "Add step: Only if" }).click();
    await page.getByTestId("step-if_1").waitFor();
    await page.getByRole("button", { name: "Remove action_1" }).click();

    // The condition: the field from the ingredient picker, "is more than", a number (the sample's amount is one).
    const cond = "Conditions of if_1 › condition 1";
    await page.getByLabel(`Insert ingredient into ${cond}: field`).selectOption("{{trigger.body.amount}}");
    expect(await page.getByLabel(`${cond}: field`, { exact: true }).inputValue()).toBe("trigger.body.amount");
    await page.getByLabel(`${cond}: operator`).selectOption("gt");
    const value = page.getByLabel(`${cond}: value`);
    expect(await value.getAttribute("type")).toBe("number");
    await value.fill("100");

    // Then: Slack.
    const then = page.getByTestId("branch-if_1-then");
    await then.getByRole("button", { name: "Add step: Action" }).click();
    await then.getByTestId("action-card-slack").click();
    const slackStep = page.getByTestId("step-action_1");
    await slackStep.getByRole("textbox", { name: "Webhook URL" }).fill(s.fake.url("/ok/services/T0/B0/large"));
    await slackStep.locator("#action0-text").fill("Large order: {{trigger.body.title}} ({{trigger.body.amount}})");

    // Else: email to the outbox.
    await page.getByRole("button", { name: "+ Else (when the conditions do not hold)" }).click();
    const otherwise = page.getByTestId("branch-if_1-else");
    await otherwise.getByRole("button", { name: "Add step: Action" }).click();
    await otherwise.getByTestId("action-card-email").click();
    const emailStep = page.getByTestId("step-action_2");
    await emailStep.getByRole("textbox", { name: "To" }).fill("me@example.com");
    await emailStep.getByRole("textbox", { name: "Subject" }).fill("Small order {{trigger.body.title}}");

    // Preview on a large sample: the then branch is taken…
    await setAmount(page, 150);
    await page.getByRole("button", { name: "Preview", exact: true }).click();
    await page.getByTestId("preview-mark-if_1").filter({ hasText: "→ then" }).waitFor();
    await page.locator('[data-testid="branch-if_1-then"][data-taken="true"]').waitFor();
    await page.locator('[data-testid="branch-if_1-else"][data-taken="false"]').waitFor();
    expect(await page.getByTestId("preview-mark-if_1").textContent()).toContain("150 > 100");
    await page.getByTestId("preview-mark-action_2").filter({ hasText: "not reached" }).waitFor();
    await shots(page, "step-editor-branching-large");

    // …and on a small one (the preview follows the edit) the else branch.
    await setAmount(page, 20);
    await page.getByTestId("preview-mark-if_1").filter({ hasText: "→ else" }).waitFor();
    await page.locator('[data-testid="branch-if_1-else"][data-taken="true"]').waitFor();
    await shots(page, "step-editor-branching-small");

    await page.locator("#applet-name").fill("Orders by size");
    await page.getByRole("button", { name: "Save applet" }).click();
    await page.waitForURL(/\/applets\/[0-9a-f-]{36}$/);
    // A branching applet opens in the editor, as its steps.
    await page.getByTestId("step-if_1").waitFor();
    const webhookUrl = await page.getByTestId("webhook-url").inputValue();
    const id = page.url().split("/").at(-1)!;
    const stored = (await (await page.request.get(`/api/applets/${id}`)).json()) as { applet: { definition: { version: number; steps: { id: string; type: string }[] } } };
    expect(stored.applet.definition.version).toBe(2);
    expect(stored.applet.definition.steps.map((s) => [s.id, s.type])).toEqual([["if_1", "if"]]);

    // Two events: a large order and a small one.
    const fire = async (amount: number): Promise<string> => {
      const res = await page.request.post(webhookUrl, { data: { title: `Order ${amount}`, amount } });
      expect(res.status()).toBe(202);
      return ((await res.json()) as { run_id: string }).run_id;
    };
    const large = await fire(150);
    const small = await fire(20);

    await page.goto(`/runs/${large}`);
    await page.getByTestId("run-status").filter({ hasText: /^succeeded$/ }).waitFor();
    await page.locator('[data-testid="branch-if_1-then"][data-taken="true"]').waitFor();
    await page.locator('[data-testid="branch-if_1-else"][data-taken="false"]').waitFor();
    await shots(page, "step-editor-run-large");

    await page.goto(`/runs/${small}`);
    await page.getByTestId("run-status").filter({ hasText: /^succeeded$/ }).waitFor();
    await page.locator('[data-testid="branch-if_1-else"][data-taken="true"]').waitFor();
    await shots(page, "step-editor-run-small");

    const slack = s.fake.received.filter((r) => r.path.startsWith("/ok/services/T0/B0/large"));
    expect(slack.map((r) => JSON.parse(r.body) as unknown)).toEqual([{ text: "Large order: Order 150 (150)" }]);
    expect(errors).toEqual([]);
    await page.context().close();
  }, 300_000);
});
