import { nextRunAfter } from "@whenthen/schedules";
import { formatInTimeZone } from "date-fns-tz";
import { describe, expect, test } from "vitest";
import { redact, renderConfig, renderTemplate, templatePaths, type TemplateContext } from "@/lib/template";

const long200 = "a".repeat(200);

const ctx: TemplateContext = {
  trigger: {
    title: "  Hello World  ",
    name: "Ünïcödé Straße — Tést!",
    html: "<p>Fish &amp; chips</p><script>alert('x')</script><style>p{color:red}</style><p>are&nbsp;<b>great</b> &lt;3 &#8364;5 &#x263A;</p>",
    items: [{ title: "first item" }, { title: "second item" }],
    body: { "user name": "Ann Lee", user: { name: "ann" }, "weird]key": "w" },
    x: "bracket x",
    count: 42,
    ok: false,
    zero: 0,
    nothing: null,
    empty: "",
    list: [1, 2, 3],
    obj: { a: 1, b: [true, null] },
    long: long200,
    when: "2026-03-08T07:30:00Z",
    whenLocal: "2026-03-08T09:00:00",
    epoch: 1772955000000,
    epochString: "1772955000000",
    rfc2822: "Sun, 08 Mar 2026 07:30:00 GMT",
    bad: "not a date",
    query: "a b&c=d/é",
    injected: "{{secrets.API_KEY}}",
    headers: { "content-type": "application/json" },
  },
  vars: { k: 1 },
  ai: { summary: "short" },
  applet: { id: "app_1", name: "My applet" },
  run: { id: "run_1", attempt: 2 },
  now: "2026-03-08T12:00:00.000Z",
};

interface Case {
  name: string;
  template: string;
  value: string;
  warnings?: string[];
  timezone?: string;
}

const cases: Case[] = [
  // paths
  { name: "dot path", template: "Hi {{trigger.body.user.name}}!", value: "Hi ann!" },
  { name: "array index", template: "{{trigger.items[0].title}}", value: "first item" },
  { name: "array index via dot", template: "{{trigger.items.1.title}}", value: "second item" },
  { name: "double-quoted bracket key with a space", template: '{{trigger.body["user name"]}}', value: "Ann Lee" },
  { name: "single-quoted bracket key", template: "{{trigger['x']}}", value: "bracket x" },
  { name: "bracket key containing ]", template: "{{trigger.body['weird]key']}}", value: "w" },
  { name: "hyphenated key by dot", template: "{{trigger.headers.content-type}}", value: "application/json" },
  { name: "whitespace inside braces", template: "{{   trigger.count   }}", value: "42" },
  { name: "number", template: "{{trigger.count}}", value: "42" },
  { name: "false and zero", template: "{{trigger.ok}}/{{trigger.zero}}", value: "false/0" },
  { name: "null renders empty without warning", template: "[{{trigger.nothing}}]", value: "[]" },
  { name: "object renders as JSON", template: "{{trigger.obj}}", value: '{"a":1,"b":[true,null]}' },
  { name: "array renders as JSON", template: "{{trigger.list}}", value: "[1,2,3]" },
  { name: "applet, run, vars, ai", template: "{{applet.name}} {{run.attempt}} {{vars.k}} {{ai.summary}}", value: "My applet 2 1 short" },
  { name: "string length is an own property", template: "{{trigger.items.length}}", value: "2" },
  // missing paths
  { name: "missing path", template: "a{{trigger.foo}}b", value: "ab", warnings: ["unresolved: trigger.foo"] },
  { name: "missing path is reported as written", template: "{{ trigger.items[9]['t'] }}", value: "", warnings: ["unresolved: trigger.items[9]['t']"] },
  { name: "path through a primitive", template: "{{trigger.count.x}}", value: "", warnings: ["unresolved: trigger.count.x"] },
  { name: "prototype: constructor", template: "{{trigger.constructor}}", value: "", warnings: ["unresolved: trigger.constructor"] },
  { name: "prototype: __proto__", template: "{{trigger.__proto__}}", value: "", warnings: ["unresolved: trigger.__proto__"] },
  { name: "prototype: toString", template: "{{trigger.items.toString}}", value: "", warnings: ["unresolved: trigger.items.toString"] },
  { name: "prototype: constructor.name chain", template: "{{trigger.title.constructor.name}}", value: "", warnings: ["unresolved: trigger.title.constructor.name"] },
  { name: "prototype: top-level hasOwnProperty", template: "{{hasOwnProperty}}", value: "", warnings: ["unresolved: hasOwnProperty"] },
  // escapes and malformed input
  { name: "escaped braces", template: "\\{{trigger.count}} is {{trigger.count}}", value: "{{trigger.count}} is 42" },
  { name: "unclosed braces are literal", template: "a {{trigger.count", value: "a {{trigger.count" },
  { name: "lone closing braces are literal", template: "a }} b", value: "a }} b" },
  {
    name: "invalid expression is literal and warns",
    template: "{{ it's }} {{trigger.count}}",
    value: "{{ it's }} 42",
    warnings: ["invalid template expression {{ it's }}: unexpected '''"],
  },
  // filters
  { name: "upper", template: "{{trigger.body.user.name | upper}}", value: "ANN" },
  { name: "lower", template: "{{trigger.body['user name']|lower}}", value: "ann lee" },
  { name: "trim", template: "[{{trigger.title | trim}}]", value: "[Hello World]" },
  { name: "truncate: shorter text unchanged", template: "{{trigger.x | truncate:50}}", value: "bracket x" },
  { name: "truncate: N characters then …", template: "{{trigger.items[0].title | truncate:5}}", value: "first…" },
  { name: "truncate: trailing space dropped before …", template: "{{trigger.items[0].title | truncate:6}}", value: "first…" },
  { name: "truncate:140 of 200 characters", template: "{{trigger.long | truncate:140}}", value: "a".repeat(140) + "…" },
  { name: "truncate without a number warns", template: "{{trigger.x | truncate}}", value: "bracket x", warnings: ["truncate: expected a whole number of characters, got nothing"] },
  { name: "default on missing", template: "{{trigger.foo | default:'n/a'}}", value: "n/a" },
  { name: "default on null", template: '{{trigger.nothing | default:"none"}}', value: "none" },
  { name: "default on empty string", template: "{{trigger.empty | default:'blank'}}", value: "blank" },
  { name: "default keeps 0 and false", template: "{{trigger.zero | default:'x'}}{{trigger.ok | default:'x'}}", value: "0false" },
  { name: "default with a number argument", template: "{{trigger.foo | default:7}}", value: "7" },
  { name: "default argument containing }}", template: "{{trigger.foo | default:'}}'}}", value: "}}" },
  { name: "json of a string", template: "{{trigger.x | json}}", value: '"bracket x"' },
  { name: "json of an object", template: "{{trigger.body.user | json}}", value: '{"name":"ann"}' },
  { name: "strip_html", template: "{{trigger.html | strip_html}}", value: "Fish & chips are great <3 €5 ☺" },
  { name: "slug", template: "{{trigger.name | slug}}", value: "unicode-strasse-test" },
  { name: "slug capped at 80 without a trailing dash", template: "{{trigger.long | slug}}", value: "a".repeat(80) },
  { name: "urlencode", template: "q={{trigger.query | urlencode}}", value: "q=a%20b%26c%3Dd%2F%C3%A9" },
  { name: "date in UTC by default", template: "{{trigger.when | date:'yyyy-MM-dd HH:mm'}}", value: "2026-03-08 07:30" },
  {
    name: "date with timezone (EST, hours before the DST switch)",
    template: "{{trigger.when | date:'yyyy-MM-dd HH:mm'}}",
    timezone: "America/New_York",
    value: "2026-03-08 03:30",
  },
  { name: "date from epoch ms", template: "{{trigger.epoch | date:'yyyy-MM-dd HH:mm'}}", timezone: "Europe/Paris", value: "2026-03-08 08:30" },
  { name: "date from numeric string", template: "{{trigger.epochString | date:\"HH:mm\"}}", value: "07:30" },
  { name: "date from RFC 2822", template: "{{trigger.rfc2822 | date:'yyyy-MM-dd HH:mm'}}", timezone: "Asia/Tokyo", value: "2026-03-08 16:30" },
  {
    name: "date: ISO without offset is wall time in the timezone",
    template: "{{trigger.whenLocal | date:'HH:mm xxx'}}",
    timezone: "America/New_York",
    value: "09:00 -04:00", // after the 02:00 spring-forward that day
  },
  { name: "date: invalid date", template: "[{{trigger.bad | date:'yyyy'}}]", value: "[]", warnings: ['date: invalid date "not a date"'] },
  { name: "date: invalid format", template: "[{{trigger.when | date:'YYYY'}}]", value: "[]", warnings: ['date: invalid format "YYYY"'] },
  {
    name: "date: unknown timezone falls back to UTC",
    template: "{{trigger.when | date:'HH:mm'}}",
    timezone: "Mars/Olympus",
    value: "07:30",
    warnings: ['date: unknown timezone "Mars/Olympus", using UTC'],
  },
  { name: "unknown filter passes the value through", template: "{{trigger.x | shout}}", value: "bracket x", warnings: ["unknown filter: shout"] },
  // chains
  { name: "chain: strip_html then truncate", template: "{{trigger.html | strip_html | truncate:12}}", value: "Fish & chips…" },
  { name: "chain: trim, lower, slug", template: "{{ trigger.title | trim | lower | slug }}", value: "hello-world" },
  { name: "chain: default after upper of a missing value", template: "{{trigger.foo | upper | default:'none'}}", value: "none" },
  { name: "chain: json then urlencode", template: "{{trigger.list | json | urlencode}}", value: "%5B1%2C2%2C3%5D" },
  // single pass
  { name: "ingredient text is never rendered again", template: "{{trigger.injected}}", value: "{{secrets.API_KEY}}" },
];

describe("renderTemplate", () => {
  test.each(cases)("AC2: $name", ({ template, value, warnings, timezone }) => {
    const result = renderTemplate(template, ctx, { timezone });
    expect(result.value).toBe(value);
    expect(result.warnings).toEqual(warnings ?? []);
    expect(result.secretsUsed).toEqual([]);
  });

  test("AC2: truncate:140 of a 200-character string is at most 141 characters", () => {
    const { value } = renderTemplate("{{trigger.long | truncate:140}}", ctx);
    expect(Array.from(value).length).toBeLessThanOrEqual(141);
    expect(value.endsWith("…")).toBe(true);
  });

  test("AC2: truncate counts characters, not UTF-16 units", () => {
    const { value } = renderTemplate("{{trigger.s | truncate:2}}", { trigger: { s: "😀😀😀" } });
    expect(value).toBe("😀😀…");
  });

  test("AC2: repeated unresolved paths warn once", () => {
    const { warnings } = renderTemplate("{{trigger.a}}{{trigger.a}}{{trigger.b}}", ctx);
    expect(warnings).toEqual(["unresolved: trigger.a", "unresolved: trigger.b"]);
  });

  test("AC2: a throwing getter in the context becomes a warning", () => {
    const trigger = Object.defineProperty({}, "boom", {
      enumerable: true,
      get() {
        throw new Error("kaboom");
      },
    });
    const result = renderTemplate("a{{trigger.boom}}b", { trigger });
    expect(result.value).toBe("ab");
    expect(result.warnings).toEqual(["error rendering trigger.boom: kaboom"]);
  });

  test("AC2: a circular object renders empty with a warning", () => {
    const loop: Record<string, unknown> = {};
    loop.self = loop;
    const result = renderTemplate("[{{trigger.loop}}]", { trigger: { loop } });
    expect(result.value).toBe("[]");
    expect(result.warnings).toHaveLength(1);
    expect(result.warnings[0]).toMatch(/^cannot render value as JSON/);
  });
});

describe("secrets", () => {
  const store: Record<string, string> = { API_KEY: "sk-live-123456", PIN: "42", TOKEN: "a b/c" };
  const calls: string[] = [];
  const secretCtx: TemplateContext = {
    ...ctx,
    secrets: (name) => {
      calls.push(name);
      return Object.prototype.hasOwnProperty.call(store, name) ? store[name] : undefined;
    },
  };

  test("AC2: secrets resolve through the resolver and are listed", () => {
    calls.length = 0;
    const result = renderTemplate("Bearer {{secrets.API_KEY}} pin={{ secrets['PIN'] }}", secretCtx);
    expect(result.value).toBe("Bearer sk-live-123456 pin=42");
    expect(result.secretsUsed).toEqual(["sk-live-123456", "42"]);
    expect(result.warnings).toEqual([]);
    expect(calls).toEqual(["API_KEY", "PIN"]);
  });

  test("AC2: secrets are resolved lazily, only when named", () => {
    calls.length = 0;
    renderTemplate("{{trigger.count}} {{vars.k}}", secretCtx);
    expect(calls).toEqual([]);
  });

  test("AC2: a missing secret renders empty and warns", () => {
    const result = renderTemplate("[{{secrets.NOPE}}]", secretCtx);
    expect(result).toEqual({ value: "[]", warnings: ["unresolved: secrets.NOPE"], secretsUsed: [] });
  });

  test("AC2: secrets without a resolver, or the secrets object itself, are unresolved", () => {
    expect(renderTemplate("{{secrets.API_KEY}}", ctx).warnings).toEqual(["unresolved: secrets.API_KEY"]);
    expect(renderTemplate("{{secrets}}", secretCtx).warnings).toEqual(["unresolved: secrets"]);
    expect(renderTemplate("{{secrets.API_KEY.length}}", secretCtx).value).toBe("");
  });

  test("AC2: a filtered secret lists its changed form too, so redaction catches it", () => {
    const result = renderTemplate("https://x.test/?t={{secrets.TOKEN | urlencode}}", secretCtx);
    expect(result.value).toBe("https://x.test/?t=a%20b%2Fc");
    expect(result.secretsUsed).toEqual(["a b/c", "a%20b%2Fc"]);
    expect(redact(result.value, result.secretsUsed)).toBe("https://x.test/?t=[redacted]");
  });

  test("AC2: an ingredient containing {{secrets.X}} is not rendered again and uses no secret", () => {
    calls.length = 0;
    const result = renderTemplate("{{trigger.injected}}", secretCtx);
    expect(result.value).toBe("{{secrets.API_KEY}}");
    expect(result.secretsUsed).toEqual([]);
    expect(calls).toEqual([]);
  });

  test("AC2: renderConfig renders every string leaf and merges warnings and secrets", () => {
    const config = {
      url: "https://hooks.test/{{secrets.API_KEY}}",
      retries: 3,
      enabled: true,
      nothing: null,
      headers: { "X-Pin": "{{secrets.PIN}}", "{{not.rendered}}": "{{trigger.missing}}" },
      columns: ["{{trigger.count}}", ["{{trigger.missing}}", 7]],
    };
    const { rendered, warnings, secretsUsed } = renderConfig(config, secretCtx);
    expect(rendered).toEqual({
      url: "https://hooks.test/sk-live-123456",
      retries: 3,
      enabled: true,
      nothing: null,
      headers: { "X-Pin": "42", "{{not.rendered}}": "" },
      columns: ["42", ["", 7]],
    });
    expect(warnings).toEqual(["unresolved: trigger.missing"]);
    expect(secretsUsed).toEqual(["sk-live-123456", "42"]);
    expect(config.url).toBe("https://hooks.test/{{secrets.API_KEY}}");
  });

  test("AC2: renderConfig keeps an own __proto__ key as data", () => {
    const config = JSON.parse('{"__proto__": {"polluted": "{{trigger.count}}"}}') as Record<string, unknown>;
    const { rendered } = renderConfig(config, ctx);
    expect(Object.getPrototypeOf(rendered)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(rendered, "__proto__")?.value).toEqual({ polluted: "42" });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe("redact", () => {
  test("AC2: redacts inside longer strings, nested arrays and objects, not keys", () => {
    const stored = {
      url: "https://hooks.test/sk-live-123456/post",
      "sk-live-123456": "key stays",
      nested: [["pin 42 and 42"], { deep: ["xsk-live-123456x"] }],
      count: 42,
      flag: true,
      none: null,
    };
    const out = redact(stored, ["sk-live-123456", "42"]);
    expect(out).toEqual({
      url: "https://hooks.test/[redacted]/post",
      "sk-live-123456": "key stays",
      nested: [["pin [redacted] and [redacted]"], { deep: ["x[redacted]x"] }],
      count: 42,
      flag: true,
      none: null,
    });
    expect(stored.url).toBe("https://hooks.test/sk-live-123456/post");
  });

  test("AC2: the longer of two overlapping secrets is removed whole; regex characters are literal", () => {
    expect(redact("a.b+c and a.b", ["a.b", "a.b+c"])).toBe("[redacted] and [redacted]");
    expect(redact("axb", ["a.b"])).toBe("axb");
  });

  test("AC2: a secret re-encoded on its way out (URL parser, encodeURI(Component), form, JSON) is redacted in every form", () => {
    const secret = "ab cd|ef";
    const sent = new URL(`https://api.test/v1/${secret}/x?token=${secret}#${secret}`).toString();
    expect(sent).toContain("ab%20cd|ef");
    expect(redact(`net: ECONNRESET for ${sent}`, [secret])).toBe("net: ECONNRESET for https://api.test/v1/[redacted]/x?token=[redacted]#[redacted]");
    expect(redact(`a=${encodeURIComponent(secret)} b=${encodeURI(secret)} c=${new URLSearchParams({ k: secret }).toString().slice(2)}`, [secret])).toBe("a=[redacted] b=[redacted] c=[redacted]");
    const user = new URL("https://h.test/");
    user.username = secret;
    expect(redact(user.href, [secret])).toBe("https://[redacted]@h.test/");
    const quoted = 'pa"ss\\word\n';
    expect(redact(`body: ${JSON.stringify({ echo: quoted })}`, [quoted])).toBe('body: {"echo":"[redacted]"}');
    // A form the URL parser shortens (dot segments) is not used: it could match unrelated text.
    expect(redact("see /b and a/../b", ["a/../b"])).toBe("see /b and [redacted]");
  });

  test("AC2: empty secret values redact nothing", () => {
    expect(redact(["abc"], ["", ""])).toEqual(["abc"]);
  });
});

describe("templatePaths", () => {
  test("AC2: lists distinct paths as written, skipping escapes and invalid expressions", () => {
    const t = "{{ ai.summary | upper }} {{trigger.items[0].title}} \\{{vars.skip}} {{ai.summary}} {{ bad bad }} {{vars.k|default:'x'}}";
    expect(templatePaths(t)).toEqual(["ai.summary", "trigger.items[0].title", "vars.k"]);
    expect(templatePaths("no templates")).toEqual([]);
  });
});

describe("robustness", () => {
  // Deterministic generator, so a failure is reproducible.
  function rng(seed: number) {
    let s = seed >>> 0;
    return () => {
      s = (s * 1664525 + 1013904223) >>> 0;
      return s / 2 ** 32;
    };
  }
  const alphabet = ["{{", "}}", "{", "}", "\\", "|", ":", "'", '"', "[", "]", ".", " ", "trigger", "secrets", "API", "items", "0", "-1", "title", "upper", "truncate", "date", "default", "json", "slug", "__proto__", "constructor", "é", "😀", "\uD800", "<b>", "&amp;", ","];

  test("AC2: hundreds of random templates never throw and always return strings", () => {
    const random = rng(12345);
    const fuzzCtx: TemplateContext = { ...ctx, secrets: (n) => (n === "API" ? "zz-secret" : undefined) };
    for (let i = 0; i < 500; i++) {
      const len = Math.floor(random() * 20);
      let t = "";
      for (let j = 0; j < len; j++) t += alphabet[Math.floor(random() * alphabet.length)];
      const tz = random() < 0.2 ? "Not/AZone" : "America/New_York";
      const result = renderTemplate(t, fuzzCtx, { timezone: tz });
      expect(typeof result.value).toBe("string");
      expect(Array.isArray(result.warnings)).toBe(true);
      expect(() => templatePaths(t)).not.toThrow();
      expect(() => renderConfig({ a: [t, { b: t }] }, fuzzCtx)).not.toThrow();
    }
  });

  test("AC2: strip_html stays fast on hostile input", () => {
    const hostile = "<script>".repeat(20000) + "<".repeat(20000) + "<!--".repeat(20000);
    const started = performance.now();
    const result = renderTemplate("{{trigger.h | strip_html}}", { trigger: { h: hostile } });
    expect(performance.now() - started).toBeLessThan(1000);
    expect(typeof result.value).toBe("string");
  });
});

const formatISO = (d: Date, tz: string) => formatInTimeZone(d, tz, "yyyy-MM-dd'T'HH:mm:ssXXX");

describe("templates: real values", () => {
  test("date with epoch seconds (1772955000) renders 2026-03-08, not 1970-01-21; milliseconds still work", () => {
    for (const t of [1772955000, "1772955000"]) {
      expect(renderTemplate("{{trigger.t | date:'yyyy-MM-dd HH:mm'}}", { trigger: { t } })).toEqual({ value: "2026-03-08 07:30", warnings: [], secretsUsed: [] });
    }
    expect(renderTemplate("{{trigger.t | date:'yyyy-MM-dd HH:mm'}}", { trigger: { t: 1772955000000 } }).value).toBe("2026-03-08 07:30");
  });

  test("date on a wall time in the DST gap (02:30 on 2026-03-29 in Berlin) is the first valid time after it, as the scheduler fires", () => {
    const r = renderTemplate("{{trigger.t | date:\"yyyy-MM-dd'T'HH:mmXXX\"}}", { trigger: { t: "2026-03-29T02:30:00" } }, { timezone: "Europe/Berlin" });
    expect(r.value).toBe("2026-03-29T03:00+02:00");
    // The scheduler fires a 02:30 cron on that day at the same instant.
    const fire = nextRunAfter({ cron: "30 2 29 3 *", timezone: "Europe/Berlin" }, new Date("2026-03-28T12:00:00Z"));
    expect(renderTemplate("{{trigger.t | date}}", { trigger: { t: "2026-03-29T02:30:00" } }, { timezone: "Europe/Berlin" }).value).toBe(formatISO(fire, "Europe/Berlin"));
    // A repeated fall-back time is its first occurrence (CEST, +02:00).
    expect(renderTemplate("{{trigger.t | date:'HH:mm XXX'}}", { trigger: { t: "2026-10-25T02:30:00" } }, { timezone: "Europe/Berlin" }).value).toBe("02:30 +02:00");
  });

  test.each([
    ["Chinese", "北京欢迎你", "bei-jing-huan-ying-ni"],
    ["Cyrillic", "Привет, мир!", "privet-mir"],
    ["Arabic", "مرحبا بالعالم", "mrhb-blaalm"],
    ["Greek", "Ελληνικά νέα", "ellinika-nea"],
  ])("slug of %s text is transliterated, not empty", (_script, text, expected) => {
    expect(renderTemplate("{{trigger.t | slug}}", { trigger: { t: text } }).value).toBe(expected);
  });

  test("truncate cuts on grapheme boundaries: 👍🏽, a flag, a family and e + accent stay whole", () => {
    const cut = (t: string, n: number) => renderTemplate(`{{trigger.t | truncate:${n}}}`, { trigger: { t } }).value;
    expect(cut("👍🏽👍🏽👍🏽", 1)).toBe("👍🏽…");
    expect(cut("🇩🇪🇫🇷🇮🇹", 2)).toBe("🇩🇪🇫🇷…");
    expect(cut("👨‍👩‍👧‍👦 family", 1)).toBe("👨‍👩‍👧‍👦…");
    expect(cut("e\u0301e\u0301e\u0301", 2)).toBe("e\u0301e\u0301…");
  });

  test("a config string that is exactly one {{…}} keeps the ingredient's JSON type under a typed key; mixed text stays text", () => {
    const trigger = { body: { amount: 59.9, paid: true, note: null, items: [{ sku: "A" }], meta: { id: 7 }, title: "order paid" } };
    const config = {
      url: "https://x.example/{{trigger.body.amount}}",
      body: {
        amount: "{{trigger.body.amount}}",
        paid: "{{ trigger.body.paid }}",
        note: "{{trigger.body.note}}",
        items: "{{trigger.body.items}}",
        meta: "{{trigger.body.meta}}",
        label: "EUR {{trigger.body.amount}}",
        title: "{{trigger.body.title | upper}}",
        missing: "{{trigger.body.nope}}",
        nested: ["{{trigger.body.amount}}", { deep: "{{trigger.body.paid}}" }],
      },
    };
    const r = renderConfig(config, { trigger }, { typedKeys: ["body"] });
    expect(r.rendered).toEqual({
      url: "https://x.example/59.9",
      body: { amount: 59.9, paid: true, note: null, items: [{ sku: "A" }], meta: { id: 7 }, label: "EUR 59.9", title: "ORDER PAID", missing: "", nested: [59.9, { deep: true }] },
    });
    expect(r.warnings).toEqual(["unresolved: trigger.body.nope"]);
    // A copy: changing what was sent does not change the event's payload.
    (r.rendered.body.items as unknown as { sku: string }[])[0]!.sku = "B";
    expect(trigger.body.items[0]!.sku).toBe("A");
    // Without typedKeys (every other action field) it is text, as before.
    expect(renderConfig(config, { trigger }).rendered.body.amount).toBe("59.9");
  });
});
