import type { z } from "zod";

/**
 * zod's own messages ("Too small: expected number to be >=1", "Invalid input: expected string,
 * received number") said as a form says them: what the value must be, with no subject, so the
 * editor can put the field's label before it ("Most items per check: must be at least 1"). A
 * message a schema writes itself ("at least 5 minutes") wins over these: zod asks a per-parse
 * error map only for issues without one.
 */
export const inUserWords: z.core.$ZodErrorMap = (issue) => {
  switch (issue.code) {
    case "invalid_type":
      if (issue.input === undefined) return "is required";
      return `must be ${TYPE_WORDS[issue.expected] ?? issue.expected}`;
    case "too_small":
      return smallOrBig(issue.origin, "at least", "more than", issue.minimum, issue.inclusive);
    case "too_big":
      return smallOrBig(issue.origin, "at most", "less than", issue.maximum, issue.inclusive);
    case "invalid_value":
      return issue.values.length === 1 ? `must be ${show(issue.values[0])}` : `must be one of ${issue.values.map(show).join(", ")}`;
    case "invalid_format":
      return issue.format === "regex" ? "is not in the expected form" : `must be a valid ${issue.format}`;
    case "not_multiple_of":
      return `must be a multiple of ${String(issue.divisor)}`;
    case "invalid_union":
      return "is not any of the accepted forms";
    default:
      return undefined;
  }
};

const TYPE_WORDS: Record<string, string> = {
  string: "text",
  number: "a number",
  int: "a whole number",
  boolean: "on or off (true or false)",
  object: "a JSON object",
  record: "a JSON object",
  array: "a list",
  date: "a date",
};

const show = (v: unknown): string => (typeof v === "string" ? `"${v}"` : String(v));

function smallOrBig(origin: string, inclusiveWord: string, exclusiveWord: string, bound: number | bigint, inclusive: boolean | undefined): string {
  const n = Number(bound);
  if (origin === "string") {
    if (n === 1 && inclusive !== false && inclusiveWord === "at least") return "is required";
    return `must be ${inclusiveWord} ${n} character${n === 1 ? "" : "s"} long`;
  }
  if (origin === "array" || origin === "set") return `must have ${inclusiveWord} ${n} item${n === 1 ? "" : "s"}`;
  return `must be ${inclusive === false ? exclusiveWord : inclusiveWord} ${n}`;
}
