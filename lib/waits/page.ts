/** The small page behind an approval link: what is being approved, and one button that POSTs. */
export interface PageView {
  title: string;
  text: string;
  applet?: string;
  runId?: string;
  message?: string | null;
  /** Shows the one-click form for this decision. */
  ask?: "approve" | "deny";
}

const esc = (s: string): string => s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);

export function approvalPage(v: PageView): string {
  const form = v.ask
    ? `<form method="post"><button type="submit" class="${v.ask}">${v.ask === "approve" ? "Approve" : "Deny"}</button></form>`
    : "";
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="robots" content="noindex"><title>${esc(v.title)} · whenthen</title>
<style>body{font:16px/1.5 system-ui,sans-serif;margin:0;background:#f6f7f9;color:#1f2328}main{max-width:32rem;margin:3rem auto;padding:1.5rem;background:#fff;border:1px solid #d0d7de;border-radius:8px}h1{font-size:1.4rem;margin:0 0 .75rem}.meta{color:#57606a;font-size:.9rem}blockquote{margin:1rem 0;padding:.75rem 1rem;background:#f6f8fa;border-left:4px solid #8c959f;white-space:pre-wrap;word-break:break-word}button{font:inherit;font-weight:600;padding:.6rem 1.4rem;border-radius:6px;border:1px solid transparent;color:#fff;cursor:pointer}button.approve{background:#1f883d}button.deny{background:#cf222e}@media (max-width:600px){main{margin:0;border:0;border-radius:0;min-height:100vh;box-sizing:border-box}}</style></head>
<body><main><h1>${esc(v.title)}</h1>${v.applet ? `<p class="meta">Applet <strong>${esc(v.applet)}</strong>${v.runId ? ` · run <code>${esc(v.runId)}</code>` : ""}</p>` : ""}${v.message ? `<blockquote>${esc(v.message)}</blockquote>` : ""}${v.text ? `<p>${esc(v.text)}</p>` : ""}${form}</main></body></html>`;
}
