import type { TriggerType } from "../triggers";

/**
 * The ready examples (onboarding): at least one applet per trigger type. The first five use
 * only what works on a laptop with nothing configured: the email action writes to the outbox (DATA_DIR/outbox) while
 * SMTP_URL is unset, the note action writes under NOTES_ROOT, and the webhook and email triggers
 * receive locally (the app's own URL, the worker's SMTP port). The applets list's empty state turns
 * one into a disabled applet to edit (POST /api/applets/from-example), and `pnpm seed` seeds the
 * same five with demo runs: one list, here. The ones that reach a server of yours (a mailbox, an
 * MQTT broker, Home Assistant, Matrix, Gotify) name in their description each secret to set.
 *
 * A definition is written as the editor would save it; tests/unit/examples.test.ts checks each
 * with checkDefinition, so a plug-in change that breaks one fails there, not in front of a user.
 */
export interface AppletExample {
  /** Stable key: the API's `key`, and the seed's id for it. */
  key: string;
  triggerType: TriggerType;
  name: string;
  /** One sentence for the card: what it does and how to try it on a laptop. */
  description: string;
  /** The definition; `inboundDomain` is INBOUND_DOMAIN (the email trigger's address is `<alias>@<domain>`). */
  definition(ctx: { inboundDomain: string }): Record<string, unknown>;
}

export const APPLET_EXAMPLES: readonly AppletExample[] = [
  {
    key: "webhook-to-note",
    triggerType: "webhook",
    name: "Contact form → notes",
    description: "A local webhook: POST a JSON body ({\"name\", \"email\", \"message\"}) to its URL with curl, and each submission is appended to a note.",
    definition: () => ({
      version: 1,
      trigger: { type: "webhook", config: {} },
      actions: [
        {
          type: "note",
          config: {
            folder: "inbox",
            filename: "contact-form.md",
            content: "- {{now_local}} **{{trigger.body.name | default:'someone'}}** <{{trigger.body.email | default:'no email'}}>: {{trigger.body.message}}\n",
            mode: "append",
          },
        },
      ],
    }),
  },
  {
    key: "schedule-to-email",
    triggerType: "schedule",
    name: "Weekday standup reminder",
    description: "Every weekday at 08:30, an email to yourself; with no SMTP_URL it lands in the outbox, listed in Settings.",
    definition: () => ({
      version: 1,
      trigger: { type: "schedule", config: { cron: "30 8 * * 1-5", timezone: "Europe/Berlin" } },
      actions: [
        {
          type: "email",
          config: {
            to: "me@example.com",
            subject: "Standup in 30 minutes ({{trigger.weekday}} {{trigger.date}})",
            body_markdown: "Good morning!\n\n- What did I finish yesterday?\n- What is today's one thing?\n- Anything blocking?\n\n_Sent by whenthen at {{trigger.time}} {{trigger.timezone}}._",
          },
        },
      ],
    }),
  },
  {
    key: "rss-to-note",
    triggerType: "rss",
    name: "Hacker News front page → reading notes",
    description: "Every 15 minutes, each new front-page story becomes a Markdown note (discussion threads are skipped by the filter code).",
    definition: () => ({
      version: 1,
      trigger: { type: "rss", config: { url: "https://hnrss.org/frontpage", interval_min: 15, fire_on_first_poll: false, max_items_per_poll: 20 } },
      filter: { code: "if (/^(Ask|Tell) HN/.test(trigger.title)) skip('discussion thread');" },
      actions: [
        {
          type: "note",
          config: {
            folder: "reading/hn",
            filename: "{{trigger.published_at | date:'yyyy-MM-dd'}}-{{trigger.title | slug}}.md",
            content: "# {{trigger.title}}\n\n{{trigger.link}}\n\n{{trigger.summary}}\n",
            mode: "create",
          },
        },
      ],
    }),
  },
  {
    key: "email-to-note",
    triggerType: "email",
    name: "Receipts by email → bookkeeping note",
    description: "Forward receipts to its inbound address (on a laptop: swaks to the worker's SMTP port) and each one is appended to a bookkeeping note.",
    definition: () => ({
      version: 1,
      trigger: { type: "email", config: { to_alias: "receipts", subject_regex: "(receipt|invoice)" } },
      actions: [
        {
          type: "note",
          config: { folder: "finance", filename: "receipts.md", content: "- {{trigger.date | date:'yyyy-MM-dd'}} {{trigger.from_name | default:'(no name)'}} <{{trigger.from}}>: {{trigger.subject}}\n", mode: "append" },
        },
      ],
    }),
  },
  {
    key: "poll-to-email",
    triggerType: "poll",
    name: "BTC under $50k → email + price log",
    description: "Every 5 minutes, checks a public price; when it drops under $50,000, an email (to the outbox) and a line in a price log note.",
    definition: () => ({
      version: 1,
      trigger: {
        type: "poll",
        config: {
          url: "https://api.coinbase.com/v2/prices/BTC-USD/spot",
          method: "GET",
          headers: { Accept: "application/json" },
          interval_min: 5,
          path: "data.amount",
          condition: "lt",
          target: 50000,
        },
      },
      actions: [
        { type: "email", config: { to: "me@example.com", subject: "BTC is at ${{trigger.value}}", body_markdown: "BTC is at **${{trigger.value}}** (was ${{trigger.previous_value}}), under $50,000." } },
        { type: "note", config: { folder: "finance", filename: "btc-prices.md", content: "- {{trigger.changed_at}} {{trigger.value}}\n", mode: "append" } },
      ],
    }),
  },
  {
    key: "imap-to-note",
    triggerType: "imap",
    name: "Invoices in your mailbox → bookkeeping note",
    description: "Watches your own mailbox (Fastmail here; any IMAP server, with an app password in the secret IMAP_PASSWORD): each new unread mail with \"invoice\" in its subject is noted and marked read.",
    definition: () => ({
      version: 1,
      trigger: {
        type: "imap",
        config: { host: "imap.fastmail.com", port: 993, tls: "tls", user: "me@example.com", password: "{{secrets.IMAP_PASSWORD}}", mailbox: "INBOX", include_read: false, subject_contains: "invoice", after: "seen", poll_only: false, poll_seconds: 60 },
      },
      actions: [
        {
          type: "note",
          config: {
            folder: "finance",
            filename: "invoices.md",
            content: "- {{trigger.date | date:'yyyy-MM-dd'}} {{trigger.from_name | default:'(no name)'}} <{{trigger.from}}>: {{trigger.subject}}\n",
            mode: "append",
          },
        },
      ],
    }),
  },
  {
    key: "mqtt-door-to-home",
    triggerType: "mqtt",
    name: "Front door opens → porch light + Matrix message",
    description: "A Zigbee door sensor on your MQTT broker (ALLOW_PRIVATE_URLS=true for one on your network): when it opens, Home Assistant turns the porch light on (secret HOME_ASSISTANT_TOKEN) and the family room on Matrix hears of it (secret MATRIX_TOKEN).",
    definition: () => ({
      version: 1,
      trigger: { type: "mqtt", config: { broker_url: "mqtt://127.0.0.1:1883", topic: "zigbee2mqtt/front_door", qos: 1 } },
      filter: { code: "if (trigger.payload.contact !== false) skip('the door closed');" },
      actions: [
        { type: "homeassistant", config: { base_url: "http://homeassistant.local:8123", token: "{{secrets.HOME_ASSISTANT_TOKEN}}", service: "light.turn_on", data: { entity_id: "light.porch", brightness_pct: 100 } } },
        { type: "matrix", config: { homeserver: "https://matrix-client.matrix.org", access_token: "{{secrets.MATRIX_TOKEN}}", room: "#family:matrix.org", text: "The front door opened at {{now_local | date:'HH:mm'}}.", notice: true } },
      ],
    }),
  },
  {
    key: "mqtt-freezer-to-gotify",
    triggerType: "mqtt",
    name: "Freezer too warm → Gotify alarm + siren",
    description: "Reads every temperature a sensor publishes; above −12 °C, a priority-8 push through your Gotify server (secret GOTIFY_TOKEN) and ON published to the siren's MQTT topic.",
    definition: () => ({
      version: 1,
      trigger: { type: "mqtt", config: { broker_url: "mqtt://127.0.0.1:1883", topic: "home/+/freezer", qos: 1 } },
      filter: { code: "if (!(trigger.payload.temperature > -12)) skip('cold enough');" },
      actions: [
        { type: "gotify", config: { server_url: "https://gotify.example.com", app_token: "{{secrets.GOTIFY_TOKEN}}", title: "Freezer at {{trigger.payload.temperature}} °C", message: "The {{trigger.topic_levels[1]}} freezer reads **{{trigger.payload.temperature}} °C**.", priority: 8, markdown: true } },
        { type: "mqtt", config: { broker_url: "mqtt://127.0.0.1:1883", topic: "home/siren/set", payload: "ON", qos: 1, retain: false } },
      ],
    }),
  },
];

/** The example with this key, or undefined. */
export const exampleByKey = (key: string): AppletExample | undefined => APPLET_EXAMPLES.find((e) => e.key === key);
