import { randomBytes } from "node:crypto";
import { z } from "zod";
import { ActionError, errorMessage } from "../core/errors";
import { LIMITS } from "../core/limits";
import { brokerFields, connectBroker, endBroker, qosField, topicNameProblem } from "../mqtt/client";
import { field } from "../plugin";
import { hasTemplate, requireRendered, requiredText } from "./common";
import type { ActionPlugin } from "./types";

/**
 * Publishes a message to an MQTT broker: a rendered topic and payload, with QoS and the retain
 * flag. One connection per run (a clean session with a random client id), closed once the broker
 * acknowledged the message (QoS 1 and 2) or it was written (QoS 0). MQTT has no message id a
 * subscriber could dedupe on, so a run retried after a lost acknowledgement may publish twice.
 *
 * A broker that cannot be reached is a retryable failure; a refused login, a refused client and a
 * topic that is not one fail at once, in the broker's words.
 */

export const mqttActionConfigSchema = z.strictObject({
  ...brokerFields("mqtt"),
  topic: field(
    requiredText("mqtt", "topic").superRefine((v, ctx) => {
      if (hasTemplate(v)) return;
      const problem = topicNameProblem(v.trim());
      if (problem) ctx.addIssue({ code: "custom", message: `mqtt: ${problem}` });
    }),
    { label: "Topic", kind: "text", required: true, template: true, placeholder: "home/garage/door/set", help: "No wildcards: the one topic to publish to." },
  ),
  payload: field(z.string().max(LIMITS.webhookBodyBytes, `mqtt: "payload" is larger than ${LIMITS.webhookBodyBytes} bytes`), {
    label: "Payload",
    kind: "textarea",
    template: true,
    placeholder: '{"state": "ON"}',
    help: "Sent as written once rendered (JSON, or plain text such as ON); may be empty.",
  }),
  qos: qosField("QoS", "1: the broker acknowledges it (retried otherwise); 0: sent once, unconfirmed."),
  retain: field(z.boolean().optional(), { label: "Retain", kind: "boolean", help: "The broker keeps it as the topic's current value for subscribers that join later." }),
});
export type MqttActionConfig = z.output<typeof mqttActionConfigSchema>;

/** Refusals that the same request meets again: a retry cannot help. */
const FINAL = /refused the user name or password|not authorized|refused the client id|refusing to connect|no such host|certificate/;

export const mqttAction: ActionPlugin<MqttActionConfig> = {
  type: "mqtt",
  label: "MQTT publish",
  description: "Publish a message to a topic on your MQTT broker: switch a light, feed a dashboard, wake Node-RED.",
  configSchema: mqttActionConfigSchema,
  exampleConfig: { broker_url: "mqtt://broker.local:1883", username: "whenthen", password: "{{secrets.MQTT_PASSWORD}}", topic: "home/notify", payload: '{"title": "{{trigger.body.title}}"}', qos: 1, retain: false },

  async dryRun(config, ctx) {
    if (config.password) ctx.secret(config.password);
    const topic = requireRendered("mqtt", "topic", config.topic).trim();
    const problem = topicNameProblem(topic);
    if (problem) throw new ActionError(`mqtt: ${problem}`, { retryable: false });
    const retain = config.retain ?? false;
    return {
      kind: "mqtt",
      summary: `would publish ${Buffer.byteLength(config.payload)} bytes to ${topic} at ${config.broker_url}`,
      broker_url: config.broker_url,
      ...(config.username ? { username: config.username } : {}),
      topic,
      payload: config.payload,
      qos: config.qos,
      retain,
    };
  },

  async run(config, ctx) {
    if (config.password) ctx.secret(config.password);
    const topic = requireRendered("mqtt", "topic", config.topic).trim();
    const problem = topicNameProblem(topic);
    if (problem) throw new ActionError(`mqtt: ${problem}`, { retryable: false });
    let connection: Awaited<ReturnType<typeof connectBroker>>;
    try {
      // The config is rendered already: the password is the value itself.
      connection = await connectBroker("mqtt", config, { render: (t) => Promise.resolve(t), config: ctx.config }, { clientId: `wt-pub-${randomBytes(6).toString("hex")}`, clean: true });
    } catch (err) {
      const message = errorMessage(err);
      throw new ActionError(message, { retryable: !FINAL.test(message), cause: err });
    }
    const { client } = connection;
    try {
      await client.publishAsync(topic, config.payload, { qos: config.qos, retain: config.retain ?? false });
    } catch (err) {
      throw new ActionError(`mqtt: publishing to "${topic}" at ${config.broker_url} failed: ${errorMessage(err)}`, { retryable: true, cause: err });
    } finally {
      await endBroker(client);
    }
    return { output: { status: "published", topic, qos: config.qos, retain: config.retain ?? false, bytes: Buffer.byteLength(config.payload) } };
  },
};

export default mqttAction;
