import { z } from "zod";
import { field } from "../plugin";
import type { ActionContext } from "./types";

/**
 * `approval_buttons`, shared by the actions whose service has link buttons (Slack, Telegram,
 * ntfy): an Approve and a Deny button that open the run's approval page for its next wait, the
 * same `{{run.approve_url}}` / `{{run.deny_url}}` a message could quote. A button only opens the
 * page; the page's own button decides (a POST), so a chat client's link preview decides nothing.
 * Saving refuses the option when no for_approval wait follows the step (lib/definition/steps.ts).
 */
export const APPROVAL_BUTTONS = "approval_buttons";

export const APPROVE_LABEL = "Approve";
export const DENY_LABEL = "Deny";

export const approvalButtonsField = (showWhen?: { field: string; equals: string[] }) =>
  field(z.boolean().optional(), {
    label: "Approve and Deny buttons",
    kind: "boolean",
    ...(showWhen ? { showWhen } : {}),
    help: "Adds Approve and Deny buttons that open the approval page of the for_approval wait after this step (the page asks once more, so a link preview decides nothing). The applet needs such a wait after this step.",
  });

export interface ApprovalLinks {
  approve_url: string;
  deny_url: string;
}

/**
 * The links the buttons open: the run's next wait's. Null (with a warning on the step) where the
 * run has none, as in a dry run, where the message goes out without buttons.
 */
export function approvalLinks(action: string, ctx: Pick<ActionContext, "waitLinks" | "warn">): ApprovalLinks | null {
  const links = ctx.waitLinks?.() ?? null;
  if (!links) ctx.warn(`${action}: this run has no approval links here, so the message went without its Approve and Deny buttons`);
  return links;
}
