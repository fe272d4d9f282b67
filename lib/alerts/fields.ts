/**
 * The fields of each channel plug-in that carry the message: whenthen writes them for every alert,
 * so a channel's config holds only where it goes (the webhook URL, the address, the topic) and
 * how. No imports: the Settings form (a client component) reads it too.
 */
export const MESSAGE_FIELDS = {
  email: ["subject", "body_markdown"],
  slack: ["text", "blocks"],
  discord: ["content"],
  push: ["title", "message"],
  http: ["body"],
  // Home Assistant: a notify service (notify.mobile_app_…) takes the alert as its data.
  homeassistant: ["data"],
  matrix: ["text"],
  gotify: ["title", "message"],
} as const satisfies Record<"email" | "slack" | "discord" | "push" | "http" | "homeassistant" | "matrix" | "gotify", readonly string[]>;
