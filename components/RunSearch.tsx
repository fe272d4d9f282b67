import Link from "next/link";
import { RUN_SEARCH_SCAN } from "@/lib/db/store/types";
import { LocalTime } from "./LocalTime";

/** The runs filter's two search boxes: text in the error, text in the event's payload. Part of the page's GET form. */
export function RunSearchFields({ error, payload }: { error?: string; payload?: string }) {
  return (
    <>
      <div className="col-span-2 min-w-0 sm:col-span-1">
        <label htmlFor="f-error" className="field-label mb-1">
          Error contains
        </label>
        <input id="f-error" type="search" name="error" defaultValue={error ?? ""} maxLength={200} placeholder="e.g. answered 500" className="input sm:w-48" />
      </div>
      <div className="col-span-2 min-w-0 sm:col-span-1">
        <label htmlFor="f-payload" className="field-label mb-1">
          Payload contains
        </label>
        <input id="f-payload" type="search" name="payload" defaultValue={payload ?? ""} maxLength={200} placeholder="e.g. an order id or email" className="input sm:w-48" />
      </div>
    </>
  );
}

/** A search looks at a bounded number of runs per page; when it stopped there, say so and offer the older ones. */
export function SearchBoundNote({ stoppedAt, olderHref }: { stoppedAt: string; olderHref: string }) {
  return (
    <p className="mb-4 rounded-md bg-slate-100 p-3 text-sm text-slate-700 ring-1 ring-slate-200" data-testid="search-bound">
      The search looked at {RUN_SEARCH_SCAN.toLocaleString("en")} runs, back to <LocalTime iso={stoppedAt} compact />, and stops there to stay fast.{" "}
      <Link href={olderHref} className="font-medium underline">
        Search older runs
      </Link>
    </p>
  );
}
