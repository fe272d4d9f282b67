"use client";
import { PluginIcon } from "@/components/PluginIcon";

interface PickablePlugin {
  type: string;
  label: string;
  description: string;
}

const CARD_TONE = {
  trigger: "hover:bg-indigo-50 hover:ring-indigo-300",
  action: "hover:bg-emerald-50 hover:ring-emerald-300",
} as const;

/** The cards a trigger or an action is picked from: icon, label, description. */
export function PluginCards<P extends PickablePlugin>({ kind, plugins, onPick }: { kind: "trigger" | "action"; plugins: P[]; onPick: (plugin: P) => void }) {
  return (
    <div className="grid gap-3 sm:grid-cols-2 lg:grid-cols-3">
      {plugins.map((p) => (
        <button key={p.type} type="button" data-testid={`${kind}-card-${p.type}`} onClick={() => onPick(p)} className={`flex items-start gap-3 rounded-lg p-3 text-left ring-1 ring-slate-200 ${CARD_TONE[kind]}`}>
          <PluginIcon kind={kind} type={p.type} label={p.label} />
          <span>
            <span className="block font-medium">{p.label}</span>
            <span className="mt-0.5 block text-xs text-slate-600">{p.description}</span>
          </span>
        </button>
      ))}
    </div>
  );
}

/** A step's numbered heading ("1 When this happens"). */
export function StepHeading({ id, step, children }: { id: string; step: number; children: React.ReactNode }) {
  return (
    <h2 id={id} className="mb-3 text-base font-semibold">
      <span className="mr-2 inline-flex h-6 w-6 items-center justify-center rounded-full bg-indigo-600 text-xs text-white">{step}</span>
      {children}
    </h2>
  );
}

/** Problems from the last save, beside what they are about. */
export function Alerts({ messages, className = "text-xs font-medium text-red-700" }: { messages: string[]; className?: string }) {
  return (
    <>
      {messages.map((m) => (
        <p key={m} className={className} role="alert">
          {m}
        </p>
      ))}
    </>
  );
}
