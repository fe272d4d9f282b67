"use client";
import { parseSample, webhookCurl } from "@/lib/ui/sample";
import { CopyButton } from "./CopyButton";
import { useSharedSample } from "./editor/sharedSample";

/** The webhook's curl line, sending the body of the sample the applet is tested with (./editor/sharedSample). */
export function WebhookCurl({ appletId, triggerType, url, builtin }: { appletId: string; triggerType: string; url: string; builtin: Record<string, unknown> }) {
  const [choice] = useSharedSample({ appletId, triggerType }, builtin);
  const parsed = parseSample(choice.text);
  const curl = webhookCurl(url, parsed.ok ? parsed.value : builtin);
  return (
    <div className="mt-2 flex items-center gap-2">
      <code className="block min-w-0 flex-1 overflow-x-auto rounded bg-slate-900 px-3 py-2 font-mono text-xs whitespace-nowrap text-slate-100" data-testid="webhook-curl">
        {curl}
      </code>
      <CopyButton text={curl} label="Copy curl" />
    </div>
  );
}
