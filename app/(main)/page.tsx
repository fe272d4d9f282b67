import Link from "next/link";
import { EnabledToggle } from "@/components/EnabledToggle";
import { LocalTime } from "@/components/LocalTime";
import { PluginIcon } from "@/components/PluginIcon";
import { StatusBadge } from "@/components/StatusBadge";
import { appletList } from "@/lib/api/queries";
import { services } from "@/lib/services";

export const dynamic = "force-dynamic";
export const metadata = { title: "Applets · whenthen" };

export default async function AppletsPage() {
  // The same list GET /api/applets answers.
  const applets = await appletList(services().app);

  return (
    <div className="mx-auto max-w-6xl">
      <header className="mb-4 flex items-center justify-between">
        <h1 className="text-xl font-semibold">Applets</h1>
        <Link href="/applets/new" className="btn-primary">
          New applet
        </Link>
      </header>

      {applets.length === 0 ? (
        <div className="card py-12 text-center">
          <p className="font-medium">No applets yet.</p>
          <p className="mt-1 text-sm text-slate-600">An applet is one rule: when a trigger fires (a webhook, a schedule, a feed, an email, a value that changes), run its actions.</p>
          <Link href="/applets/new" className="btn-primary mt-4">
            Create your first applet
          </Link>
        </div>
      ) : (
        <div className="relative overflow-x-auto rounded-lg bg-white shadow-sm ring-1 ring-slate-200">
          <table className="min-w-full divide-y divide-slate-200">
            <thead className="bg-slate-50">
              <tr>
                <th className="th">Name</th>
                <th className="th">When → then</th>
                <th className="th">Enabled</th>
                <th className="th">Last run</th>
                <th className="th text-right">Runs (24 h)</th>
              </tr>
            </thead>
            <tbody className="divide-y divide-slate-100">
              {applets.map((a) => {
                return (
                  <tr key={a.id} className="hover:bg-slate-50">
                    <td className="td max-w-[12rem] sm:max-w-xs">
                      <Link href={`/applets/${a.id}`} className="block truncate font-medium text-indigo-700 hover:underline">
                        {a.name}
                      </Link>
                    </td>
                    <td className="td">
                      <span className="inline-flex items-center gap-1.5">
                        <PluginIcon kind="trigger" type={a.trigger_type} />
                        <span className="text-slate-400" aria-hidden="true">
                          →
                        </span>
                        {a.action_types.map((t, i) => (
                          <PluginIcon key={i} kind="action" type={t} />
                        ))}
                      </span>
                    </td>
                    <td className="td">
                      <EnabledToggle id={a.id} enabled={a.enabled} name={a.name} />
                    </td>
                    <td className="td whitespace-nowrap">
                      {a.last_run_status ? (
                        <span className="inline-flex items-center gap-2">
                          <StatusBadge status={a.last_run_status} />
                          <LocalTime iso={a.last_run_at} className="text-slate-600" />
                        </span>
                      ) : (
                        <span className="text-slate-400">never run</span>
                      )}
                    </td>
                    <td className="td text-right tabular-nums">{a.runs_24h}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}
