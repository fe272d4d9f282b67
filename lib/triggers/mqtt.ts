import { createHash, randomBytes } from "node:crypto";
import type { IPublishPacket } from "mqtt";
import { z } from "zod";
import { errorMessage } from "../core/errors";
import { LIMITS } from "../core/limits";
import { brokerFields, connectBroker, endBroker, qosField, topicFilterProblem } from "../mqtt/client";
import { field } from "../plugin";
import type { ListenEvent, ListenTrigger } from "./types";

/**
 * The MQTT trigger: every message published to a topic filter (`home/+/temperature`, `zigbee/#`)
 * fires the applet, its payload as JSON when it parses, else as text.
 *
 * One worker subscribes (lib/listeners holds the applet's job lock), in a persistent session: a
 * client id fixed per applet, clean session off, QoS 1 by default. Messages published while no
 * worker is connected wait at the broker and arrive when one connects again. A message is
 * acknowledged only after its event is stored (the client's handleMessage), so a worker stopped
 * in between gets it again from the broker: it may then fire twice, never zero times.
 *
 * The subscription lives in the broker's session, so it is made when the session is new or the
 * filter changed (the old one is unsubscribed), and not on every connection: a retained message
 * would fire again each time. Deleting the applet ends its session at the broker.
 *
 * A payload over the webhook size limit (1 MB) is recorded as a refused run with its topic and
 * size, never stored whole.
 */

/** What the trigger remembers (trigger_state.last_value): what the broker's session is subscribed to. */
interface MqttMemory {
  subscribed: string;
  qos: number;
  broker: string;
}

/** The client id of the applet's session: stable, 23 characters (the length every broker takes). */
export const mqttClientId = (appletId: string): string => `wt-${createHash("sha256").update(appletId).digest("hex").slice(0, 20)}`;

export const mqttTriggerConfigSchema = z.strictObject({
  ...brokerFields("mqtt"),
  topic: field(
    z
      .string()
      .trim()
      .superRefine((v, ctx) => {
        const problem = topicFilterProblem(v);
        if (problem) ctx.addIssue({ code: "custom", message: `mqtt: ${problem}` });
      }),
    { label: "Topic", kind: "text", required: true, placeholder: "home/+/temperature", help: "+ matches one level, # (last) every level below: home/+/temperature, zigbee2mqtt/#." },
  ),
  qos: qosField("QoS", "1 (the default) keeps messages published while whenthen is down until it connects again; 0 loses them."),
});
export type MqttTriggerConfig = z.output<typeof mqttTriggerConfigSchema>;

/** A received message as the event's payload: JSON when it parses, text when it is UTF-8, else base64. Pure. */
export function mqttPayload(packet: Pick<IPublishPacket, "topic" | "payload" | "qos" | "retain">, receivedAt: string): ListenEvent {
  const bytes = Buffer.isBuffer(packet.payload) ? packet.payload : Buffer.from(packet.payload);
  const base = { topic: packet.topic, topic_levels: packet.topic.split("/"), qos: packet.qos, retain: packet.retain, size: bytes.length, received_at: receivedAt };
  if (bytes.length > LIMITS.webhookBodyBytes) {
    return { dedupeKey: null, payload: { ...base, payload: null, payload_text: null }, refused: `refused: the payload is ${bytes.length} bytes, over the ${LIMITS.webhookBodyBytes} byte limit` };
  }
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return { dedupeKey: null, payload: { ...base, payload: null, payload_text: null, payload_base64: bytes.toString("base64") } };
  }
  let value: unknown = text;
  try {
    if (text.trim() !== "") value = JSON.parse(text);
  } catch {
    // Not JSON: the text itself.
  }
  return { dedupeKey: null, payload: { ...base, payload: value, payload_text: text } };
}

export const mqttTrigger: ListenTrigger<MqttTriggerConfig, "mqtt"> = {
  type: "mqtt",
  feed: "listen",
  label: "MQTT message",
  description: "A message published to a topic on your MQTT broker (Mosquitto, Home Assistant's, Zigbee2MQTT's): its payload as JSON or text, with the topic.",
  configSchema: mqttTriggerConfigSchema,
  exampleConfig: { broker_url: "mqtt://broker.local:1883", username: "whenthen", password: "{{secrets.MQTT_PASSWORD}}", topic: "home/+/temperature", qos: 1 },
  previewLabel: "Test connection",
  previewReads: ["broker_url", "username", "password", "topic", "qos"],
  ingredients: [
    { name: "topic", description: "The topic it was published to" },
    { name: "topic_levels", description: "The topic split at / (home/kitchen/temperature → [home, kitchen, temperature])" },
    { name: "payload", description: "The payload: parsed JSON when it is JSON, else the text" },
    { name: "payload_text", description: "The payload as text (null when it is not UTF-8; payload_base64 then)" },
    { name: "qos", description: "The QoS it was delivered with (0, 1 or 2)" },
    { name: "retain", description: "true for a retained message sent when subscribing" },
    { name: "size", description: "Payload size in bytes" },
    { name: "received_at", description: "When whenthen received it, ISO UTC" },
  ],
  sample: {
    topic: "home/kitchen/temperature",
    topic_levels: ["home", "kitchen", "temperature"],
    payload: { temperature: 23.4, humidity: 41, battery: 87 },
    payload_text: '{"temperature":23.4,"humidity":41,"battery":87}',
    qos: 1,
    retain: false,
    size: 48,
    received_at: "2026-03-07T18:30:00.000Z",
  },

  async listen(config, state, ctx) {
    if (ctx.signal.aborted) return;
    const clientId = mqttClientId(ctx.appletId);
    // Set from the message callback: a holder, so the checks below read it as it is then.
    const failed: { error: Error | null } = { error: null };
    let connection: { end(force: boolean): unknown } | null = null;
    // Each message is stored before the broker is told it arrived (PUBACK): a failed store leaves
    // it with the broker, which sends it again on the next connection.
    const handleMessage = (packet: IPublishPacket, done: (err?: Error) => void) => {
      ctx.emit([mqttPayload(packet, ctx.clock.now().toISOString())], {}).then(
        () => done(),
        (err: unknown) => {
          failed.error = err instanceof Error ? err : new Error(errorMessage(err));
          done(failed.error);
          connection?.end(true);
        },
      );
    };
    const { client, sessionPresent } = await connectBroker("mqtt", config, ctx, { clientId, clean: false, handleMessage });
    connection = client;
    const closed = new Promise<void>((resolve) => client.once("close", () => resolve()));
    const stop = () => void endBroker(client);
    ctx.signal.addEventListener("abort", stop, { once: true });
    try {
      const memory = state.lastValue as Partial<MqttMemory> | null;
      const same = sessionPresent && memory?.subscribed === config.topic && memory.qos === config.qos && memory.broker === config.broker_url;
      if (!same) {
        if (sessionPresent && memory?.subscribed && memory.subscribed !== config.topic) await client.unsubscribeAsync(memory.subscribed);
        const granted = await client.subscribeAsync(config.topic, { qos: config.qos });
        if (granted.some((g) => g.qos === 128)) throw new Error(`mqtt: the broker at ${config.broker_url} refused the subscription to "${config.topic}" (not allowed for this user?)`);
        await ctx.emit([], { lastValue: { subscribed: config.topic, qos: config.qos, broker: config.broker_url } satisfies MqttMemory });
      }
      await ctx.connected();
      ctx.log.info(`mqtt: subscribed to ${config.topic} at ${config.broker_url}${sessionPresent ? " (session resumed)" : ""}`);
      await closed;
      if (failed.error) throw failed.error;
      if (!ctx.signal.aborted) throw new Error(`mqtt: the broker at ${config.broker_url} closed the connection`);
    } catch (err) {
      if (ctx.signal.aborted && !failed.error) return;
      throw err instanceof Error && err.message.startsWith("mqtt:") ? err : new Error(`mqtt: ${errorMessage(err)}`, { cause: err });
    } finally {
      ctx.signal.removeEventListener("abort", stop);
      await endBroker(client);
      if (ctx.signal.reason === "deleted") await forgetSession(config, ctx, clientId);
    }
  },

  /** "Test connection": connects with a throwaway session, subscribes, and shows the retained messages it gets at once. */
  async preview(config, ctx) {
    const { client } = await connectBroker("mqtt", config, ctx, { clientId: `wt-test-${randomBytes(6).toString("hex")}`, clean: true });
    try {
      const retained: Record<string, unknown>[] = [];
      client.on("message", (topic, payload, packet) => {
        if (retained.length < 3) retained.push(mqttPayload(packet, ctx.clock.now().toISOString()).payload);
      });
      const granted = await client.subscribeAsync(config.topic, { qos: config.qos });
      if (granted.some((g) => g.qos === 128)) throw new Error(`mqtt: the broker at ${config.broker_url} refused the subscription to "${config.topic}" (not allowed for this user?)`);
      // Retained messages follow the SUBACK at once; a short wait lets them in.
      await ctx.clock.sleep(500);
      return {
        connected: true,
        summary: `Connected to ${config.broker_url}${config.username ? ` as ${config.username}` : ""} and subscribed to ${config.topic} (QoS ${granted[0]?.qos ?? config.qos} granted). ${retained.length ? `${retained.length} retained message${retained.length === 1 ? "" : "s"} below.` : "No retained message on it now; messages published after saving fire the applet."}`,
        items: retained.map((p) => ({ ...p, title: p.topic })),
      };
    } finally {
      await endBroker(client);
    }
  },
};

/** A deleted applet's session is ended at the broker (a clean connection), or its messages would pile up there. */
async function forgetSession(config: MqttTriggerConfig, ctx: Parameters<typeof connectBroker>[2] & { log: { warn(m: string, f?: object): void } }, clientId: string): Promise<void> {
  try {
    const { client } = await connectBroker("mqtt", config, ctx, { clientId, clean: true });
    await endBroker(client);
  } catch (err) {
    ctx.log.warn("mqtt: could not end the deleted applet's session at the broker", { error: errorMessage(err) });
  }
}

export default mqttTrigger;
