"use client";
import { useRouter } from "next/navigation";
import { useEffect, useState } from "react";
import { LocalTime } from "@/components/LocalTime";
import type { VersionListItem } from "@/lib/api/queries";
import { versionDiff, type DiffLine, type VersionContent } from "@/lib/applets/versions";
import type { Problem } from "@/lib/definition";
import { api, errorBody } from "@/lib/ui/api-client";

type Loaded = { ok: true; value: VersionContent } | { ok: false; error: string };

/** GET /api/applets/:id/versions/:n: the version's name, enabled state and whole definition. */
async function loadVersion(id: string, n: number): Promise<Loaded> {
  const res = await api.api.applets[":id"].versions[":n"].$get({ param: { id, n: String(n) } }).catch(() => null);
  if (!res) return { ok: false, error: "network error" };
  if (!res.ok) return { ok: false, error: (await errorBody(res)).error ?? `failed (${res.status})` };
  const { version } = await res.json();
  return { ok: true, value: { name: version.name, enabled: version.enabled, definition: version.definition } };
}

/**
 * The applet's History: every saved version with who saved it, when and what it
 * changed; a readable diff of any two; "Restore this version", which saves that version again as a
 * new one (so a restore is itself in the history and can be undone the same way).
 */
export function AppletHistory({ appletId, versions, selected }: { appletId: string; versions: VersionListItem[]; selected?: number }) {
  const router = useRouter();
  const current = versions[0]?.version ?? 0;
  const initial = selected && versions.some((v) => v.version === selected) ? selected : current;
  const [open, setOpen] = useState(selected !== undefined);
  const [to, setTo] = useState(initial);
  const [from, setFrom] = useState(Math.max(initial - 1, 0));
  const [restoring, setRestoring] = useState<number | null>(null);
  const [refused, setRefused] = useState<{ version: number; error: string; problems: Problem[] } | null>(null);
  const [purging, setPurging] = useState<number | null>(null);
  const [purgeNote, setPurgeNote] = useState<{ version: number; ok: boolean; text: string } | null>(null);

  // A save elsewhere on the page adds a version: the comparison follows the newest unless one was picked.
  const [followed, setFollowed] = useState(current);
  if (followed !== current) {
    setFollowed(current);
    if (to === followed) {
      setTo(current);
      setFrom(current - 1);
    }
  }

  function compare(n: number) {
    setTo(n);
    setFrom(n - 1);
    setRefused(null);
  }

  async function restore(n: number) {
    setRestoring(n);
    setRefused(null);
    const res = await api.api.applets[":id"].versions[":n"].restore.$post({ param: { id: appletId, n: String(n) } }).catch(() => null);
    setRestoring(null);
    if (!res) return setRefused({ version: n, error: "network error: nothing was restored", problems: [] });
    if (!res.ok) {
      const body = await errorBody(res);
      return setRefused({ version: n, error: body.error ?? `restore failed (${res.status})`, problems: body.problems ?? [] });
    }
    const restored = (await res.json()).applet.version;
    // A new key for the editor below: it starts again from the restored definition.
    router.push(`/applets/${encodeURIComponent(appletId)}?restored=${restored}#history`);
  }

  async function purge(v: VersionListItem) {
    const what = v.literal_credentials.join(", ");
    if (!window.confirm(`Purge the credentials of version ${v.version}? ${what} will be replaced by “[credential purged]” where version ${v.version} is stored. This cannot be undone; also rotate the credential if others may have read it.`)) return;
    setPurging(v.version);
    setPurgeNote(null);
    const res = await api.api.applets[":id"].versions[":n"]["purge-credentials"].$post({ param: { id: appletId, n: String(v.version) } }).catch(() => null);
    setPurging(null);
    if (!res) return setPurgeNote({ version: v.version, ok: false, text: "network error: nothing was purged" });
    if (!res.ok) return setPurgeNote({ version: v.version, ok: false, text: (await errorBody(res)).error ?? `purge failed (${res.status})` });
    const { purged } = await res.json();
    setPurgeNote({ version: v.version, ok: true, text: `Version ${v.version}: purged ${purged.join(", ") || "nothing (no literal credential left)"}.` });
    router.refresh();
  }

  const currentLiteral = versions.find((v) => v.version === current)?.literal_credentials ?? [];

  return (
    <section className="mb-6" id="history" aria-label="History">
      <div className="mb-2 flex flex-wrap items-baseline justify-between gap-2">
        <h2 className="text-base font-semibold">History</h2>
        <button type="button" className="btn-secondary" aria-expanded={open} onClick={() => setOpen(!open)} data-testid="history-toggle">
          {open ? "Hide history" : `Show history (${versions.length} version${versions.length === 1 ? "" : "s"})`}
        </button>
      </div>
      {open ? (
        <div className="flex flex-col gap-4">
          <ol className="card divide-y divide-slate-100 p-0" data-testid="history-list">
            {versions.map((v) => (
              <VersionItem
                key={v.version}
                v={v}
                current={current}
                to={to}
                from={from}
                purging={purging}
                restoring={restoring}
                onPurge={() => void purge(v)}
                onCompare={() => compare(v.version)}
                onRestore={() => void restore(v.version)}
              />
            ))}
          </ol>
          {currentLiteral.length ? (
            <p className="rounded-md bg-amber-50 p-3 text-sm text-amber-900 ring-1 ring-amber-200" data-testid="current-literal">
              The current version writes {currentLiteral.join(", ")} literally, so it is stored in the applet and its history, and masked wherever the history shows it. Move {currentLiteral.length === 1 ? "it" : "them"} to a secret in the editor (Settings → Secrets, then <span className="code">{"{{secrets.NAME}}"}</span>) and save; the older versions can then be purged here.
            </p>
          ) : null}
          {purgeNote ? (
            <p role={purgeNote.ok ? "status" : "alert"} className={`rounded-md p-3 text-sm ring-1 ${purgeNote.ok ? "bg-green-50 text-green-900 ring-green-200" : "bg-red-50 text-red-900 ring-red-200"}`} data-testid="purge-note">
              {purgeNote.text}
            </p>
          ) : null}
          {refused ? (
            <div role="alert" className="rounded-md bg-red-50 p-3 text-sm text-red-900 ring-1 ring-red-200" data-testid="restore-error">
              <p className="font-semibold">Version {refused.version} was not restored</p>
              {refused.problems.length ? (
                <>
                  <p className="mt-1">It no longer passes today&apos;s checks. Fix these in the editor instead, starting from the current version:</p>
                  <ul className="mt-1 list-disc pl-5">
                    {refused.problems.map((p, i) => (
                      <li key={i}>
                        <span className="font-mono text-xs">{p.path}</span>: {p.message}
                      </li>
                    ))}
                  </ul>
                </>
              ) : (
                <p className="mt-1">{refused.error}</p>
              )}
            </div>
          ) : null}
          {to > 0 ? <VersionDiff appletId={appletId} versions={versions} from={from} to={to} onFrom={setFrom} onTo={setTo} /> : null}
        </div>
      ) : null}
    </section>
  );
}

/** One saved version: its summary, who saved it and when, and what can be done with it. */
function VersionItem(p: {
  v: VersionListItem;
  current: number;
  to: number;
  from: number;
  purging: number | null;
  restoring: number | null;
  onPurge: () => void;
  onCompare: () => void;
  onRestore: () => void;
}) {
  const { v, current, to, from, purging, restoring, onPurge, onCompare, onRestore } = p;
  return (
    <li className={`flex flex-col gap-2 px-4 py-3 sm:flex-row sm:items-center sm:justify-between ${v.version === to ? "bg-indigo-50/60" : ""}`} data-testid={`version-${v.version}`}>
      <div className="min-w-0">
        <p className="text-sm">
          <span className="mr-2 inline-block rounded bg-slate-100 px-1.5 py-0.5 font-mono text-xs text-slate-700">v{v.version}</span>
          <span className="break-words" data-testid="version-summary">
            {v.summary}
          </span>
          {v.version === current ? <span className="ml-2 rounded bg-emerald-50 px-1.5 py-0.5 text-xs text-emerald-800 ring-1 ring-emerald-200">current</span> : null}
          {v.literal_credentials.length ? (
            <span className="ml-2 rounded bg-amber-50 px-1.5 py-0.5 text-xs text-amber-900 ring-1 ring-amber-200" title={v.literal_credentials.join(", ")} data-testid={`literal-${v.version}`}>
              holds {v.literal_credentials.length === 1 ? "a credential" : `${v.literal_credentials.length} credentials`} written literally
            </span>
          ) : null}
          {v.credentials_purged ? <span className="ml-2 rounded bg-slate-100 px-1.5 py-0.5 text-xs text-slate-700" data-testid={`purged-${v.version}`}>credentials purged</span> : null}
        </p>
        <p className="mt-0.5 text-xs text-slate-500">
          {v.author.text} · <LocalTime iso={v.created_at} />
        </p>
      </div>
      <div className="flex shrink-0 flex-wrap gap-2">
        {v.literal_credentials.length && v.version !== current ? (
          <button type="button" className="btn-danger" disabled={purging !== null} onClick={onPurge} data-testid={`purge-${v.version}`}>
            {purging === v.version ? "Purging…" : "Purge credentials"}
          </button>
        ) : null}
        {v.version > 1 ? (
          <button type="button" className="btn-secondary" onClick={onCompare} aria-pressed={v.version === to && from === v.version - 1}>
            Changes
          </button>
        ) : null}
        {v.version !== current ? (
          <button type="button" className="btn-secondary" disabled={restoring !== null} onClick={onRestore} data-testid={`restore-${v.version}`}>
            {restoring === v.version ? "Restoring…" : "Restore this version"}
          </button>
        ) : null}
      </div>
    </li>
  );
}

function VersionDiff({ appletId, versions, from, to, onFrom, onTo }: { appletId: string; versions: VersionListItem[]; from: number; to: number; onFrom: (n: number) => void; onTo: (n: number) => void }) {
  const [shown, setShown] = useState<{ key: string; older: Loaded | null; newer: Loaded } | null>(null);
  // A purge rewrites stored versions: their texts are read again once the list says so.
  const purged = versions.filter((v) => v.credentials_purged).map((v) => v.version).join(",");
  const key = `${from}:${to}:${purged}`;
  useEffect(() => {
    let live = true;
    void Promise.all([from > 0 ? loadVersion(appletId, from) : Promise.resolve(null), loadVersion(appletId, to)]).then(([older, newer]) => {
      if (live) setShown({ key, older, newer });
    });
    return () => {
      live = false;
    };
  }, [appletId, from, to, key]);

  const ready = shown?.key === key ? shown : null;
  const failed = ready && (!ready.newer.ok ? ready.newer.error : ready.older && !ready.older.ok ? ready.older.error : null);
  const empty: VersionContent = { name: "", enabled: false, definition: {} };
  const diff = ready && !failed && ready.newer.ok ? versionDiff(ready.older?.ok ? ready.older.value : empty, ready.newer.value) : null;
  const pick = (value: number, onChange: (n: number) => void, label: string, allowNone: boolean) => (
    <label className="flex items-center gap-1.5">
      <span className="text-slate-600">{label}</span>
      <select className="input w-auto py-1" value={value} onChange={(e) => onChange(Number(e.target.value))}>
        {allowNone ? <option value={0}>nothing</option> : null}
        {versions.map((v) => (
          <option key={v.version} value={v.version}>
            version {v.version}
          </option>
        ))}
      </select>
    </label>
  );

  return (
    <div className="card p-0" data-testid="version-diff">
      <div className="flex flex-wrap items-center gap-x-4 gap-y-2 border-b border-slate-100 px-4 py-3 text-sm">
        <span className="font-semibold">Changes</span>
        {pick(from, onFrom, "from", true)}
        {pick(to, onTo, "to", false)}
        {diff ? (
          <span className="text-xs text-slate-500" data-testid="diff-counts">
            <span className="text-emerald-700">+{diff.added}</span> <span className="text-red-700">−{diff.removed}</span> lines
          </span>
        ) : null}
      </div>
      {failed ? <p className="px-4 py-3 text-sm text-red-700">{failed}</p> : null}
      {!ready ? <p className="px-4 py-3 text-sm text-slate-500">Loading…</p> : null}
      {diff && diff.added + diff.removed === 0 ? <p className="px-4 py-3 text-sm text-slate-600">These two versions are the same.</p> : null}
      {diff && diff.added + diff.removed > 0 ? (
        <div className="overflow-x-auto">
          <table className="w-full border-collapse font-mono text-xs leading-5">
            <tbody>
              {diff.lines.map((l, i) => (
                <DiffRow key={i} line={l} />
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </div>
  );
}

function DiffRow({ line }: { line: DiffLine }) {
  if (line.kind === "skip") {
    return (
      <tr className="bg-slate-50 text-slate-500">
        <td colSpan={3} className="px-3 py-0.5 font-sans">
          ⋯ {line.count} unchanged line{line.count === 1 ? "" : "s"}
        </td>
      </tr>
    );
  }
  const tone = line.kind === "add" ? "bg-emerald-50 text-emerald-900" : line.kind === "del" ? "bg-red-50 text-red-900" : "text-slate-700";
  const sign = line.kind === "add" ? "+" : line.kind === "del" ? "−" : " ";
  return (
    <tr className={tone} data-diff={line.kind}>
      <td className="hidden w-10 px-2 text-right text-slate-400 select-none sm:table-cell">{line.oldNo ?? ""}</td>
      <td className="hidden w-10 px-2 text-right text-slate-400 select-none sm:table-cell">{line.newNo ?? ""}</td>
      <td className="px-3 whitespace-pre">
        <span className="select-none">{sign} </span>
        {line.text}
      </td>
    </tr>
  );
}
