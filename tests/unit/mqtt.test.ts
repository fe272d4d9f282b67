import { describe, expect, test } from "vitest";
import { mqttActionConfigSchema } from "@/lib/actions/mqtt";
import { LIMITS } from "@/lib/core/limits";
import { topicFilterProblem, topicMatches, topicNameProblem } from "@/lib/mqtt/client";
import { mqttClientId, mqttPayload, mqttTriggerConfigSchema } from "@/lib/triggers/mqtt";

const packet = (payload: string | Buffer, extra: Partial<{ topic: string; qos: 0 | 1 | 2; retain: boolean }> = {}) => ({ topic: "home/kitchen/temperature", payload: typeof payload === "string" ? Buffer.from(payload) : payload, qos: 1 as const, retain: false, ...extra });

describe("MQTT topics", () => {
  test("a filter with # in the middle, or inside a level, is refused on save with where it is", () => {
    expect(topicFilterProblem("home/#/temperature")).toMatch(/"#" must be the last level on its own.*in the middle/);
    expect(topicFilterProblem("home/kitchen#")).toMatch(/inside the level "kitchen#"/);
    expect(topicFilterProblem("home/+room/temperature")).toMatch(/"\+" must stand for a whole level/);
    const parsed = mqttTriggerConfigSchema.safeParse({ broker_url: "mqtt://broker.local:1883", topic: "home/#/temperature" });
    expect(parsed.success).toBe(false);
    expect(parsed.error!.issues.map((i) => [i.path.join("."), i.message])).toEqual([["topic", expect.stringMatching(/^mqtt: "#" must be the last level/)]]);
  });

  test("wildcard filters are accepted, and match as the protocol says", () => {
    for (const f of ["#", "home/#", "home/+/temperature", "+/+", "sport/tennis/+", "a//b"]) expect(topicFilterProblem(f)).toBeNull();
    expect(topicMatches("home/+/temperature", "home/kitchen/temperature")).toBe(true);
    expect(topicMatches("home/+/temperature", "home/kitchen/humidity")).toBe(false);
    expect(topicMatches("home/#", "home")).toBe(true);
    expect(topicMatches("home/#", "home/a/b/c")).toBe(true);
    expect(topicMatches("#", "$SYS/broker/uptime")).toBe(false);
  });

  test("a topic to publish to may not hold a wildcard; a template is checked once rendered", () => {
    expect(topicNameProblem("home/+/set")).toMatch(/cannot hold "#", "\+"/);
    expect(mqttActionConfigSchema.safeParse({ broker_url: "mqtt://b:1883", topic: "home/#", payload: "x" }).success).toBe(false);
    expect(mqttActionConfigSchema.safeParse({ broker_url: "mqtt://b:1883", topic: "home/{{trigger.room}}/set", payload: "ON" }).success).toBe(true);
  });

  test("a broker URL with the password in it, or another scheme, is refused", () => {
    const bad = (broker_url: string) => mqttTriggerConfigSchema.safeParse({ broker_url, topic: "a" }).error?.issues[0]?.message;
    expect(bad("mqtt://user:pw@broker.local")).toMatch(/must not carry a user or password/);
    expect(bad("http://broker.local")).toMatch(/must start with mqtt:\/\/ or mqtts:\/\//);
    expect(bad("broker.local:1883")).toMatch(/must start with mqtt:\/\/|is not a URL/);
  });

  test("the QoS select's text value is read as a number", () => {
    expect(mqttTriggerConfigSchema.parse({ broker_url: "mqtt://b", topic: "a", qos: "0" }).qos).toBe(0);
    expect(mqttTriggerConfigSchema.parse({ broker_url: "mqtt://b", topic: "a" }).qos).toBe(1);
  });
});

describe("MQTT payloads", () => {
  test("JSON when it parses, with the topic, its levels, QoS and retain", () => {
    expect(mqttPayload(packet('{"temperature": 21.5}', { retain: true }), "2026-03-07T12:00:00.000Z")).toEqual({
      dedupeKey: null,
      payload: { topic: "home/kitchen/temperature", topic_levels: ["home", "kitchen", "temperature"], qos: 1, retain: true, size: 21, received_at: "2026-03-07T12:00:00.000Z", payload: { temperature: 21.5 }, payload_text: '{"temperature": 21.5}' },
    });
  });

  test("text when it is not JSON, base64 when it is not UTF-8", () => {
    expect(mqttPayload(packet("ON"), "t").payload).toMatchObject({ payload: "ON", payload_text: "ON" });
    expect(mqttPayload(packet(""), "t").payload).toMatchObject({ payload: "", payload_text: "" });
    expect(mqttPayload(packet(Buffer.from([0xff, 0xfe, 0x00])), "t").payload).toMatchObject({ payload: null, payload_text: null, payload_base64: "//4A" });
  });

  test("a payload over the webhook size limit is refused, not kept", () => {
    const e = mqttPayload(packet(Buffer.alloc(LIMITS.webhookBodyBytes + 1, "a")), "t");
    expect(e.refused).toBe(`refused: the payload is ${LIMITS.webhookBodyBytes + 1} bytes, over the ${LIMITS.webhookBodyBytes} byte limit`);
    expect(JSON.stringify(e.payload).length).toBeLessThan(500);
  });

  test("the session's client id is stable per applet and 23 characters long", () => {
    expect(mqttClientId("a1")).toBe(mqttClientId("a1"));
    expect(mqttClientId("a1")).not.toBe(mqttClientId("a2"));
    expect(mqttClientId("0194f2b4-8c1e-7b3a-9d2f-3e4a5b6c7d8e")).toHaveLength(23);
  });
});
