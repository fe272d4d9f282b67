/**
 * Where to go after signing in: only a path on this site. Browsers read "//evil.example" and
 * "/\evil.example" as another host, and drop tabs and newlines before parsing ("/\t/evil.example"),
 * so those, and anything that is not a plain absolute path, fall back to "/". Shared by the page
 * gate and the login form (no Node imports here).
 */
export function safeNext(next: string | null | undefined): string {
  if (!next || !next.startsWith("/") || next.startsWith("//") || next.startsWith("/\\")) return "/";
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f\s]/.test(next)) return "/";
  return next;
}
