import { describe, expect, test } from "vitest";
import { checkDefinition } from "@/lib/definition";
import { reasonWords, TIMED_REASON_CODES } from "@/lib/timed/reasons";

const note = (timing?: Record<string, unknown>) => ({ type: "note", config: { filename: "n.md", content: "hi" }, ...(timing ? { timing } : {}) });
const def = (extra: Record<string, unknown> = {}, actions: unknown[] = [note({ at: "-24h", anchor: "trigger.body.starts_at" })]) => ({
  version: 1,
  trigger: { type: "webhook", config: {} },
  actions,
  ...extra,
});

describe("timing in the definition", () => {
  test("a mixed applet (now, 24 h before, 10 min after the event) with subject, supersede, quiet hours and a cap saves", () => {
    const r = checkDefinition(
      def(
        {
          timed: {
            subject: { id: "{{trigger.body.booking.id}}", version: "{{trigger.body.booking.version}}", type: "booking" },
            supersede: { path: "trigger.body.event", values: ["booking.rescheduled", "booking.cancelled"], cancel_values: ["booking.cancelled"] },
            contact: { id: "{{trigger.body.contact.id}}", timezone: "{{trigger.body.contact.tz}}" },
            quiet_hours: { start: "21:00", end: "08:00", mode: "defer", timezone: "America/Mexico_City" },
            frequency_cap: { max: 1, per: "1d" },
          },
        },
        [note(), note({ at: "-24h", anchor: "trigger.body.starts_at", lateness: "2h", guard_anchor: true }), note({ at: "10m" }), note({ at: "0", lateness: null })],
      ),
    );
    expect(r.ok ? [] : r.problems).toEqual([]);
  });

  test("an offset or a lateness that does not parse is refused with the field named", () => {
    const r = checkDefinition(def({}, [note(), note({ at: "tomorrow" }), note({ at: "1h", lateness: "-1h" }), note({ at: "1h", lateness: "soon" })]));
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.problems.map((p) => p.path)).toEqual(["actions.1.timing.at", "actions.2.timing.lateness", "actions.3.timing.lateness"]);
    expect(r.problems[0]!.message).toMatch(/offset such as "-24h"/);
  });

  test("unknown keys, a bad anchor path, bad quiet hours and a bad cap are named", () => {
    const r = checkDefinition(
      def({ timed: { quiet_hours: { start: "25:00", end: "08:00" }, frequency_cap: { max: 0, per: "often" }, extra: 1 } }, [
        note({ at: "1h", anchor: "body.starts_at", when: "x" }),
      ]),
    );
    expect(r.ok).toBe(false);
    if (r.ok) return;
    const paths = r.problems.map((p) => p.path).sort();
    expect(paths).toEqual(["actions.0.timing", "actions.0.timing.anchor", "timed", "timed.frequency_cap.max", "timed.frequency_cap.per", "timed.quiet_hours.start"].sort());
  });

  test("every reason code has plain words", () => {
    expect(TIMED_REASON_CODES.sort()).toEqual(["frequency_cap", "late", "no_anchor", "quiet_hours", "rule_disabled", "stale", "superseded"]);
    expect(reasonWords("superseded")).toBe("replaced by a newer version of the record");
    expect(reasonWords("no_consent")).toBe("no consent");
  });
});
