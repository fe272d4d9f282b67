import type { IClientOptions, MqttClient } from "mqtt";
import { z } from "zod";
import { errorMessage } from "../core/errors";
import { connectTarget } from "../net/connect-target";
import { field } from "../plugin";

/**
 * What the MQTT trigger and action share: the broker fields, the topic rules and one connection,
 * with the broker's refusals said in the user's words. The `mqtt` package is imported on the first
 * connection, so a process without an MQTT applet never loads it.
 */

export const MQTT_CONNECT_TIMEOUT_MS = 15_000;
const MAX_TOPIC_BYTES = 65_535;

/** Why `filter` is not an MQTT topic filter (MQTT 3.1.1 §4.7), or null. */
export function topicFilterProblem(filter: string): string | null {
  if (filter === "") return "the topic filter is empty";
  if (Buffer.byteLength(filter) > MAX_TOPIC_BYTES) return "the topic filter is longer than 65,535 bytes";
  if (filter.includes("\0")) return "the topic filter contains a NUL character";
  const levels = filter.split("/");
  for (const [i, level] of levels.entries()) {
    if (level.includes("#") && (level !== "#" || i !== levels.length - 1)) return `"#" must be the last level on its own, as in home/#; "${filter}" has it ${level === "#" ? "in the middle" : `inside the level "${level}"`}`;
    if (level.includes("+") && level !== "+") return `"+" must stand for a whole level, as in home/+/temperature; "${filter}" has it inside the level "${level}"`;
  }
  if (/^\$share\//i.test(filter)) return "shared subscriptions ($share/…) are not needed: one worker subscribes for the applet";
  return null;
}

/** Why `topic` cannot be published to, or null: no wildcards. */
export function topicNameProblem(topic: string): string | null {
  if (topic === "") return "the topic is empty";
  if (Buffer.byteLength(topic) > MAX_TOPIC_BYTES) return "the topic is longer than 65,535 bytes";
  if (/[#+\0]/.test(topic)) return `a topic to publish to cannot hold "#", "+" or NUL (those are for subscribing): "${topic.slice(0, 100)}"`;
  return null;
}

/** Whether `topic` matches the filter `filter` (MQTT 3.1.1 §4.7). Pure. */
export function topicMatches(filter: string, topic: string): boolean {
  const f = filter.split("/");
  const t = topic.split("/");
  // A filter starting with a wildcard does not match $SYS/… topics (§4.7.2).
  if (topic.startsWith("$") && (f[0] === "#" || f[0] === "+")) return false;
  for (let i = 0; i < f.length; i++) {
    if (f[i] === "#") return true;
    if (i >= t.length) return false;
    if (f[i] !== "+" && f[i] !== t[i]) return false;
  }
  return f.length === t.length;
}

export const brokerUrlSchema = (plugin: string) =>
  z
    .string()
    .trim()
    .min(1, `${plugin}: "broker_url" is required, such as mqtt://broker.local:1883 or mqtts://broker.example.com:8883`)
    .max(2000)
    .superRefine((v, ctx) => {
      const problem = brokerUrlProblem(v);
      if (problem) ctx.addIssue({ code: "custom", message: `${plugin}: "broker_url" ${problem}` });
    });

function brokerUrlProblem(v: string): string | null {
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    return "is not a URL; it looks like mqtt://broker.local:1883 (or mqtts:// for TLS)";
  }
  if (u.protocol !== "mqtt:" && u.protocol !== "mqtts:") return `must start with mqtt:// or mqtts:// (TLS), not ${u.protocol}//`;
  if (!u.hostname) return "has no host";
  if (u.username || u.password) return "must not carry a user or password: use the user and password fields (the password as a secret)";
  if (u.pathname && u.pathname !== "/") return "must not have a path";
  return null;
}

/** The broker fields both plug-ins show, described once. */
export const brokerFields = (plugin: string) => ({
  broker_url: field(brokerUrlSchema(plugin), {
    label: "Broker URL",
    kind: "text",
    required: true,
    placeholder: "mqtt://broker.local:1883",
    help: "mqtt:// (port 1883) or mqtts:// with TLS (port 8883, certificate verified). A broker on your own network needs ALLOW_PRIVATE_URLS=true.",
  }),
  username: field(z.string().trim().max(500).optional(), { label: "User", kind: "text", placeholder: "whenthen", help: "Optional: leave empty for a broker without accounts." }),
  password: field(z.string().max(1000).optional(), {
    label: "Password",
    kind: "secret",
    template: true,
    placeholder: "{{secrets.MQTT_PASSWORD}}",
    help: "Optional. Store it as a secret; it is redacted from every error.",
  }),
});

export const qosField = (label: string, help: string) =>
  // The editor's select sends its value as text ("1").
  field(z.preprocess((v) => (typeof v === "string" && /^[012]$/.test(v.trim()) ? Number(v) : v), z.union([z.literal(0), z.literal(1), z.literal(2)], { error: "QoS must be 0, 1 or 2" }).default(1)), {
    label,
    kind: "select",
    options: [
      { value: "1", label: "1: at least once" },
      { value: "0", label: "0: at most once" },
      { value: "2", label: "2: exactly once" },
    ],
    help,
  });

export interface BrokerConfig {
  broker_url: string;
  username?: string;
  password?: string;
}

/** A CONNACK refusal, or a socket error, said as what to check; the broker's own words kept. */
export function mqttErrorMessage(plugin: string, url: string, err: unknown): string {
  const e = err as { code?: string | number; message?: string };
  const where = `the broker at ${url}`;
  switch (e?.code ?? "") {
    case 4:
    case 134:
      return `${plugin}: ${where} refused the user name or password (${errorMessage(err)})`;
    case 5:
    case 135:
      return `${plugin}: ${where} refused: not authorized (${errorMessage(err)})`;
    case 2:
    case 133:
      return `${plugin}: ${where} refused the client id (${errorMessage(err)})`;
    case "ECONNREFUSED":
      return `${plugin}: ${where} refused the connection (nothing listens on that port)`;
    case "ENOTFOUND":
      return `${plugin}: ${where}: no such host`;
  }
  if (/certificate|self.signed|CERT_/i.test(`${String(e?.code ?? "")} ${e?.message ?? ""}`)) return `${plugin}: ${where}: its TLS certificate was not accepted (${errorMessage(err)})`;
  return `${plugin}: ${where}: ${errorMessage(err)}`;
}

/**
 * One connection, resolved once the broker accepted it (its CONNACK: `sessionPresent`), or
 * rejected with the reason in words. Never reconnects by itself: the caller decides.
 */
export async function connectBroker(
  plugin: string,
  config: BrokerConfig,
  ctx: { render(t: string): Promise<string>; config: { allowPrivateUrls: boolean } },
  opts: { clientId: string; clean: boolean; handleMessage?: MqttClient["handleMessage"] },
): Promise<{ client: MqttClient; sessionPresent: boolean }> {
  const url = new URL(config.broker_url);
  const tls = url.protocol === "mqtts:";
  const target = await connectTarget(url.hostname, ctx.config.allowPrivateUrls, plugin);
  const password = config.password ? await ctx.render(config.password) : undefined;
  const { connect } = await import("mqtt");
  const options: IClientOptions = {
    protocol: tls ? "mqtts" : "mqtt",
    host: target.address,
    servername: target.servername,
    port: url.port ? Number(url.port) : tls ? 8883 : 1883,
    clientId: opts.clientId,
    clean: opts.clean,
    protocolVersion: 4,
    username: config.username || undefined,
    password,
    reconnectPeriod: 0,
    connectTimeout: MQTT_CONNECT_TIMEOUT_MS,
    rejectUnauthorized: true,
    keepalive: 60,
  };
  const client = connect(options);
  // Before any byte arrives: a resumed session's waiting messages may come with the CONNACK itself.
  if (opts.handleMessage) client.handleMessage = opts.handleMessage;
  return new Promise((resolve, reject) => {
    const fail = (err: unknown) => {
      client.removeAllListeners("connect");
      client.end(true);
      reject(new Error(mqttErrorMessage(plugin, config.broker_url, err), { cause: err }));
    };
    client.once("connect", (connack) => {
      client.off("error", fail);
      client.off("close", closed);
      // Later errors (a dropped connection) are noticed through "close"; without a listener an
      // "error" event would end the process.
      client.on("error", () => undefined);
      resolve({ client, sessionPresent: connack.sessionPresent });
    });
    client.once("error", fail);
    const closed = () => fail(new Error("the connection closed before the broker answered"));
    client.once("close", closed);
  });
}

/** Ends the connection: gracefully (a DISCONNECT) unless the socket is gone already. */
export function endBroker(client: MqttClient): Promise<void> {
  return new Promise((resolve) => {
    if (client.disconnected || !client.connected) {
      client.end(true, {}, () => resolve());
      return;
    }
    client.end(false, {}, () => resolve());
  });
}
