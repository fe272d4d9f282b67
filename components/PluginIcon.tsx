import { PLUGIN_ICON_PATHS } from "@/lib/ui/plugin-icons";

export function PluginIcon({ kind, type, label }: { kind: "trigger" | "action"; type: string; label?: string }) {
  const paths = PLUGIN_ICON_PATHS[`${kind}:${type}`];
  const name = label ?? type;
  const tone = kind === "trigger" ? "bg-indigo-50 text-indigo-700 ring-indigo-200" : "bg-emerald-50 text-emerald-800 ring-emerald-200";
  if (!paths) {
    return (
      <span title={`${kind}: ${name}`} className={`inline-flex h-6 w-6 shrink-0 items-center justify-center rounded-full text-xs font-semibold uppercase ring-1 ring-inset ${tone}`}>
        <span aria-hidden="true">{name.slice(0, 1)}</span>
        <span className="sr-only">{name}</span>
      </span>
    );
  }
  return (
    <span title={`${kind}: ${name}`} className={`inline-flex h-6 w-6 shrink-0 items-center justify-center rounded ring-1 ring-inset ${tone}`}>
      <svg viewBox="0 0 24 24" width="16" height="16" fill="none" stroke="currentColor" strokeWidth="1.8" strokeLinecap="round" strokeLinejoin="round" aria-hidden="true">
        {paths.map((d) => (
          <path key={d} d={d} />
        ))}
      </svg>
      <span className="sr-only">{name}</span>
    </span>
  );
}
