/** The text `whenthen applets dry-run` prints: how the run would end, then what each action would have done. */
interface DryRunAnswer {
  status: string;
  reason: string | null;
  event: { id: string | null; source: string };
  actions: {
    step_id: string;
    iteration?: number[];
    type: string;
    status: string;
    summary: string;
    requests?: { method: string; url: string; headers: Record<string, string>; body: string | null }[];
    record?: { kind: string; summary: string; path?: string; content?: string; eml?: string; topic?: string; payload?: string; request?: { method: string; url: string; body?: string } };
  }[];
}

export function dryRunText(r: DryRunAnswer): string {
  const lines = [`dry run on ${r.event.id ? `event ${r.event.id}` : `the ${r.event.source}`}: would end ${r.status}${r.reason ? ` (${r.reason})` : ""}; nothing was sent or written`];
  if (r.actions.length === 0) lines.push("no action would run");
  for (const a of r.actions) {
    lines.push(`${a.step_id}${a.iteration?.length ? `[${a.iteration.join(".")}]` : ""} (${a.type}) ${a.status}: ${a.summary}`);
    for (const q of a.requests ?? []) {
      lines.push(`  ${q.method} ${q.url}`);
      for (const [k, v] of Object.entries(q.headers)) lines.push(`    ${k}: ${v}`);
      if (q.body !== null) lines.push(...indent(q.body, "    "));
    }
    const rec = a.record;
    if (rec?.kind === "file" && rec.content !== undefined) lines.push(`  ${rec.path}`, ...indent(rec.content, "    "));
    if (rec?.kind === "email" && rec.eml) lines.push(...indent(rec.eml.replace(/\r\n/g, "\n"), "    "));
    if (rec?.kind === "mqtt") lines.push(`  ${rec.topic}`, ...indent(rec.payload ?? "", "    "));
    if (rec?.kind === "api" && rec.request) lines.push(`  ${rec.request.method} ${rec.request.url}`, ...indent(rec.request.body ?? "", "    "));
  }
  return lines.join("\n");
}

const indent = (text: string, pad: string): string[] => text.split("\n").map((l) => pad + l);
