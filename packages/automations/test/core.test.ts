import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  advanceMessageStatus,
  AUDIENCE_ACTION_ID,
  conditionScope,
  evaluateConditions,
  messageEventType,
  messagePreview,
  parseAudiencePage,
  parseAudienceRequest,
  parseDuration,
  parseMessageEventPayload,
  runId,
} from "../src/index";
import { sha256Hex } from "../src/sha256";
import type { AudiencePage, AudienceRequest, Condition, MessageEventPayload, MessageStatus } from "../src/types";

describe("durations", () => {
  it.each([
    ["-24h", -86_400_000],
    ["2h", 7_200_000],
    ["1h30m", 5_400_000],
    ["90s", 90_000],
    ["500ms", 500],
    ["1d", 86_400_000],
    ["1w", 604_800_000],
    ["+15m", 900_000],
    ["1.5h", 5_400_000],
    [3_600_000, 3_600_000],
    [-60_000, -60_000],
  ] as const)("%s is %d ms", (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each(["", "24", "h", "2 h", "2hours", "-", "1h-30m", "1y"])("refuses %j", (text) => {
    expect(parseDuration(text)).toBeNull();
  });
});

describe("evaluateConditions", () => {
  const event = { id: "e", type: "booking.created", occurredAt: 0, subject: { type: "booking", id: "b1", version: 3 }, payload: { price: 120, kind: "massage", items: ["oil"], nested: { n: null } } };
  const scope = conditionScope(event, { id: "c1", timezone: "Europe/Berlin", fields: { tags: ["vip", "new"], name: "Ana" } });
  const holds = (c: Condition) => evaluateConditions({ all: [c] }, scope);

  it.each<[Condition, boolean]>([
    [{ field: "payload.price", op: "eq", value: 120 }, true],
    [{ field: "payload.price", op: "ne", value: 120 }, false],
    [{ field: "payload.price", op: "gt", value: 100 }, true],
    [{ field: "payload.price", op: "gte", value: 120 }, true],
    [{ field: "payload.price", op: "lt", value: 120 }, false],
    [{ field: "payload.price", op: "lte", value: 120 }, true],
    // Numeric text counts as the number it spells (a form's "100" against a payload's 120).
    [{ field: "payload.price", op: "gt", value: "100" }, true],
    [{ field: "payload.price", op: "gt", value: "a hundred" }, false],
    [{ field: "payload.kind", op: "in", value: ["massage", "facial"] }, true],
    [{ field: "payload.kind", op: "not_in", value: ["massage"] }, false],
    [{ field: "payload.kind", op: "contains", value: "ssa" }, true],
    [{ field: "payload.items", op: "contains", value: "oil" }, true],
    [{ field: "payload.nested.n", op: "exists" }, true],
    [{ field: "payload.nested.n", op: "eq", value: null }, true],
    [{ field: "contact.tags", op: "in", value: ["vip"] }, true],
    [{ field: "contact.tags", op: "in", value: ["gold"] }, false],
    [{ field: "contact.tags", op: "not_in", value: ["do-not-message"] }, true],
    [{ field: "contact.tags", op: "not_in", value: ["new"] }, false],
    [{ field: "contact.id", op: "eq", value: "c1" }, true],
    [{ field: "contact.timezone", op: "eq", value: "Europe/Berlin" }, true],
    [{ field: "event.type", op: "eq", value: "booking.created" }, true],
    [{ field: "event.subject.version", op: "gte", value: 3 }, true],
  ])("%j → %s", (condition, expected) => {
    expect(holds(condition)).toBe(expected);
  });

  it("a missing path fails eq, in, contains and the comparisons, and passes ne, not_in and exists: false", () => {
    const field = "payload.nope.deeper";
    expect(holds({ field, op: "eq", value: null })).toBe(false);
    expect(holds({ field, op: "in", value: [null] })).toBe(false);
    expect(holds({ field, op: "contains", value: "x" })).toBe(false);
    for (const op of ["gt", "gte", "lt", "lte"] as const) expect(holds({ field, op, value: 0 })).toBe(false);
    expect(holds({ field, op: "exists" })).toBe(false);
    expect(holds({ field, op: "ne", value: 1 })).toBe(true);
    expect(holds({ field, op: "not_in", value: [1] })).toBe(true);
    expect(holds({ field, op: "exists", value: false })).toBe(true);
  });

  it("every `all` must hold, and one `any` when there are some", () => {
    const yes: Condition = { field: "payload.price", op: "eq", value: 120 };
    const no: Condition = { field: "payload.price", op: "eq", value: 1 };
    expect(evaluateConditions({ all: [yes, yes] }, scope)).toBe(true);
    expect(evaluateConditions({ all: [yes, no] }, scope)).toBe(false);
    expect(evaluateConditions({ all: [yes], any: [no, yes] }, scope)).toBe(true);
    expect(evaluateConditions({ all: [yes], any: [no, no] }, scope)).toBe(false);
    expect(evaluateConditions({ any: [] }, scope)).toBe(true);
    expect(evaluateConditions(undefined, scope)).toBe(true);
  });

  it("does not read inherited properties as fields", () => {
    expect(holds({ field: "payload.constructor", op: "exists" })).toBe(false);
    expect(holds({ field: "payload.kind.length", op: "exists" })).toBe(false);
  });
});

describe("runId", () => {
  const parts = { ruleId: "r", stepId: "email", subjectType: "booking", subjectId: "b1", subjectVersion: 0, contactId: "c1" };

  it("is a hash of rule, step, subject, subject version and contact: equal parts, equal ids", () => {
    expect(runId(parts)).toBe(runId({ ...parts }));
    expect(runId(parts)).toMatch(/^run_[0-9a-f]{32}$/);
    const changes = [{ ruleId: "r2" }, { stepId: "sms" }, { subjectType: "order" }, { subjectId: "b2" }, { subjectVersion: 1 }, { contactId: "c2" }, { contactId: null }];
    const ids = new Set([runId(parts), ...changes.map((c) => runId({ ...parts, ...c }))]);
    expect(ids.size).toBe(changes.length + 1);
  });

  it("cannot be made to collide by moving a separator between parts", () => {
    expect(runId({ ...parts, ruleId: "a|b", stepId: "c" })).not.toBe(runId({ ...parts, ruleId: "a", stepId: "b|c" }));
    expect(runId({ ...parts, ruleId: 'a","b', stepId: "c" })).not.toBe(runId({ ...parts, ruleId: "a", stepId: 'b","c' }));
  });

  it("uses a SHA-256 that matches the standard one", () => {
    for (const text of ["", "abc", "a".repeat(55), "a".repeat(56), "a".repeat(64), "é🙂".repeat(50)]) {
      expect(sha256Hex(text)).toBe(createHash("sha256").update(text).digest("hex"));
    }
  });

  it("the SHA-256 gives the FIPS 180-2 example digests", () => {
    expect(sha256Hex("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    expect(sha256Hex("")).toBe("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    expect(sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")).toBe("248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    expect(sha256Hex("a".repeat(1_000_000))).toBe("cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  });

  it("run ids are byte-identical to the ones the hand-written SHA-256 gave (stored runs keep matching)", () => {
    // Computed with the implementation @noble/hashes replaced: ASCII, a contact-less run, text
    // outside ASCII, and a key longer than that implementation's reused buffer.
    expect(runId({ ruleId: "booking-reminder-24h", stepId: "email", subjectType: "booking", subjectId: "b1", subjectVersion: 0, contactId: "c1" })).toBe("run_c5f810ae326b578e2bee75178373297e");
    expect(runId({ ruleId: "r", stepId: "0", subjectType: "thing", subjectId: "x", subjectVersion: 1791633600000, contactId: null })).toBe("run_65f33cca1433399727620c661e296e33");
    expect(runId({ ruleId: "récordatorio", stepId: "whatsapp", subjectType: "cita", subjectId: "Zoë 🙂", subjectVersion: 3, contactId: "ana@example.mx" })).toBe("run_7b68c4848f5cbcc74e29fd93e933cedf");
    expect(runId({ ruleId: "r".repeat(120), stepId: "s".repeat(80), subjectType: "order", subjectId: "o".repeat(300), subjectVersion: 2, contactId: "c" })).toBe("run_6ada2aded0ad25cfb6dbf39657a42034");
  });
});

describe("message status", () => {
  it("moves by rank: a late delivered does not undo read; a failure outranks every success", () => {
    expect(advanceMessageStatus("read", "delivered")).toBe("read");
    expect(advanceMessageStatus("delivered", "bounced")).toBe("bounced");
    expect(advanceMessageStatus("read", "failed")).toBe("failed");
    expect(advanceMessageStatus("bounced", "delivered")).toBe("bounced");
    expect(advanceMessageStatus("sent", "sent")).toBe("sent");
    expect(advanceMessageStatus(null, "queued")).toBe("queued");
  });

  it("ranks queued < sent < deferred < delivered < read < rejected < failed < bounced < complained", () => {
    const order: MessageStatus[] = ["queued", "sent", "deferred", "delivered", "read", "rejected", "failed", "bounced", "complained"];
    for (let i = 0; i < order.length; i++) {
      for (let j = 0; j < order.length; j++) {
        expect(advanceMessageStatus(order[i], order[j]!)).toBe(order[Math.max(i, j)]);
      }
    }
  });

  it("received never changes, and nothing outbound becomes received", () => {
    for (const next of ["queued", "read", "bounced", "complained"] as const) expect(advanceMessageStatus("received", next)).toBe("received");
    expect(advanceMessageStatus("sent", "received")).toBe("sent");
  });
});

describe("message events", () => {
  const payload: MessageEventPayload = {
    channel: "email",
    direction: "outbound",
    messageId: "msg_01",
    status: "delivered",
    at: "2026-10-10T12:00:00.000Z",
    address: "ana@example.com",
    preview: "Your booking is tomorrow",
    runId: "run_abc",
  };

  it("names the event type <channel>.message", () => {
    expect(messageEventType("email")).toBe("email.message");
    expect(messageEventType("whatsapp")).toBe("whatsapp.message");
    expect(() => messageEventType("Bad Channel")).toThrow(/channel/);
  });

  it("a preview is at most 160 characters on one line", () => {
    expect(messagePreview("  Hello\n\n  there  ")).toBe("Hello there");
    const long = messagePreview("word ".repeat(100));
    expect(Array.from(long).length).toBeLessThanOrEqual(160);
    expect(long.endsWith("…")).toBe(true);
    const emoji = messagePreview("🙂".repeat(200));
    expect(Array.from(emoji)).toHaveLength(160);
    expect(emoji.slice(0, -1)).toBe("🙂".repeat(159));
    expect(messagePreview("x".repeat(160))).toBe("x".repeat(160));
  });

  it("reads a payload back from the bus, untrusted", () => {
    expect(parseMessageEventPayload(JSON.parse(JSON.stringify(payload)))).toEqual(payload);
    expect(parseMessageEventPayload({ ...payload, address: undefined, runId: undefined, preview: undefined })).toEqual({
      channel: "email",
      direction: "outbound",
      messageId: "msg_01",
      status: "delivered",
      at: "2026-10-10T12:00:00.000Z",
    });
    expect(parseMessageEventPayload({ ...payload, preview: "p".repeat(500) })!.preview!.length).toBe(160);
  });

  it.each([
    ["not an object", "email"],
    ["an unknown status", { ...payload, status: "opened" }],
    ["an unknown direction", { ...payload, direction: "sideways" }],
    ["no message id", { ...payload, messageId: "" }],
    ["a time without a zone", { ...payload, at: "2026-10-10T12:00:00" }],
    ["a numeric address", { ...payload, address: 5 }],
    ["a bad channel", { ...payload, channel: "E Mail" }],
  ])("refuses %s", (_name, input) => {
    expect(parseMessageEventPayload(input)).toBeNull();
  });
});

describe("audience", () => {
  const request: AudienceRequest = {
    channel: "email",
    purpose: "marketing",
    tag: "vip",
    after: null,
    limit: 100,
    deliverTo: "email.broadcast_page",
    deliverParams: { broadcastId: "bc_1" },
  };
  const page: AudiencePage = {
    channel: "email",
    purpose: "marketing",
    tag: "vip",
    after: null,
    contacts: [
      { id: "c1", address: "ana@example.com", name: "Ana", timezone: "America/Mexico_City" },
      { id: "c2", address: "bo@example.com", fields: { tags: ["vip"] } },
    ],
    next: "c2",
    excluded: { no_consent: 2, no_address: 1 },
  };

  it("is one action id", () => {
    expect(AUDIENCE_ACTION_ID).toBe("contacts.audience");
  });

  it("a request round-trips, and its limit defaults to 100 and is held to 1000", () => {
    expect(parseAudienceRequest(JSON.parse(JSON.stringify(request)))).toEqual(request);
    const { limit: _l, deliverParams: _d, ...bare } = request;
    expect(parseAudienceRequest(bare)).toEqual({ ...request, limit: 100, deliverParams: {} });
    expect(parseAudienceRequest({ ...request, limit: 50_000 })!.limit).toBe(1000);
    expect(parseAudienceRequest({ ...request, limit: 0 })).toBeNull();
    expect(parseAudienceRequest({ ...request, deliverTo: "" })).toBeNull();
    expect(parseAudienceRequest({ ...request, after: 7 })).toBeNull();
  });

  it("a page round-trips as the input of the deliverTo action, and a page applied twice is the same page", () => {
    const input = JSON.parse(JSON.stringify({ ...request.deliverParams, page }));
    const read = parseAudiencePage(input.page);
    expect(read).toEqual(page);
    expect(parseAudiencePage(JSON.parse(JSON.stringify(read)))).toEqual(read);
    expect(input.broadcastId).toBe("bc_1");
  });

  it("a last page has next null; the cursor is the id of the last contact", () => {
    const last = parseAudiencePage({ ...page, after: "c2", contacts: [{ id: "c3", address: "c@example.com" }], next: null, excluded: {} });
    expect(last).toMatchObject({ after: "c2", next: null, excluded: {} });
  });

  it.each([
    ["an unknown exclusion reason", { ...page, excluded: { spam: 1 } }],
    ["a negative count", { ...page, excluded: { revoked: -1 } }],
    ["a contact without an address", { ...page, contacts: [{ id: "c1" }] }],
    ["contacts that are not a list", { ...page, contacts: {} }],
    ["a numeric cursor", { ...page, next: 3 }],
  ])("refuses a page with %s", (_name, input) => {
    expect(parseAudiencePage(input)).toBeNull();
  });
});
