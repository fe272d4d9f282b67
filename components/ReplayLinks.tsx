import Link from "next/link";
import { shortId } from "@/lib/ui/format";
import { LocalTime } from "./LocalTime";

interface LinkedRun {
  id: string;
  status: string;
  created_at: string;
}

/** The link both ways between a replay and its original run: "Replay of …" on a replay, "Replayed as …" on the original. */
export function ReplayLinks({ replayOf, replays, shownMax }: { replayOf: LinkedRun | null; replays: LinkedRun[]; shownMax: number }) {
  if (replayOf) {
    return (
      <p className="mb-4 text-sm text-slate-700" data-testid="replay-of">
        Replay of run{" "}
        <Link href={`/runs/${replayOf.id}`} className="font-mono font-medium text-indigo-700 hover:underline" aria-label={`the original run ${shortId(replayOf.id)}`}>
          {shortId(replayOf.id)}
        </Link>{" "}
        <span className="text-slate-500">
          ({replayOf.status}, <LocalTime iso={replayOf.created_at} compact />)
        </span>
        : the same event, run again from the first step.
      </p>
    );
  }
  if (!replays.length) return null;
  return (
    <div className="mb-4 text-sm text-slate-700" data-testid="replays">
      <p>
        Replayed {replays.length > shownMax ? `more than ${shownMax}` : replays.length} time{replays.length === 1 ? "" : "s"}:
      </p>
      <ul className="mt-1 flex flex-wrap gap-x-4 gap-y-1">
        {replays.slice(0, shownMax).map((r) => (
          <li key={r.id}>
            <Link href={`/runs/${r.id}`} className="font-mono font-medium text-indigo-700 hover:underline" aria-label={`replay ${shortId(r.id)}`}>
              {shortId(r.id)}
            </Link>{" "}
            <span className="text-slate-500">
              ({r.status}, <LocalTime iso={r.created_at} compact />)
            </span>
          </li>
        ))}
      </ul>
    </div>
  );
}
