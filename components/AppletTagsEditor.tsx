"use client";
import { useRouter } from "next/navigation";
import { useId, useState } from "react";
import { TAGS_MAX, TAG_MAX_LENGTH, normaliseTags, splitTags } from "@/lib/applets/tags";
import { api, errorBody } from "@/lib/ui/api-client";

/**
 * An applet's tags, edited on its page: a comma-separated field saved on its own
 * (PUT /api/applets/:id with `tags` only; the definition is left as stored). Problems show under it.
 */
export function AppletTagsEditor({ id, tags }: { id: string; tags: string[] }) {
  const router = useRouter();
  const inputId = useId();
  const [text, setText] = useState(tags.join(", "));
  const [problem, setProblem] = useState<string | null>(null);
  const [saved, setSaved] = useState(false);
  const [busy, setBusy] = useState(false);

  async function save(e: React.FormEvent) {
    e.preventDefault();
    setSaved(false);
    const checked = normaliseTags(splitTags(text));
    if (!checked.ok) return setProblem(checked.message);
    setProblem(null);
    setBusy(true);
    try {
      const res = await api.api.applets[":id"].$put({ param: { id }, json: { tags: checked.tags } });
      if (!res.ok) {
        const body = await errorBody(res);
        setProblem(body.problems?.find((p) => p.path === "tags")?.message ?? body.error ?? `could not save (${res.status})`);
        return;
      }
      setText(checked.tags.join(", "));
      setSaved(true);
      router.refresh();
    } catch {
      setProblem("could not reach the server; try again");
    } finally {
      setBusy(false);
    }
  }

  return (
    <form onSubmit={(e) => void save(e)} className="flex flex-col gap-1" data-testid="tags-editor">
      <label htmlFor={inputId} className="field-label">
        Tags
      </label>
      <div className="flex flex-wrap items-center gap-2">
        <input
          id={inputId}
          className="input max-w-md flex-1"
          value={text}
          onChange={(e) => {
            setText(e.target.value);
            setSaved(false);
          }}
          placeholder="e.g. work, finance"
          aria-invalid={problem ? true : undefined}
          aria-describedby={problem ? `${inputId}-problem` : `${inputId}-hint`}
        />
        <button type="submit" className="btn-secondary" disabled={busy}>
          {busy ? "Saving…" : "Save tags"}
        </button>
        {saved ? (
          <span role="status" className="text-sm text-green-800">
            Saved.
          </span>
        ) : null}
      </div>
      {problem ? (
        <p id={`${inputId}-problem`} className="text-sm text-red-700" role="alert">
          {problem}
        </p>
      ) : (
        <p id={`${inputId}-hint`} className="help mt-0">
          Separated by commas; at most {TAGS_MAX}, each up to {TAG_MAX_LENGTH} characters. The applets list filters by them.
        </p>
      )}
    </form>
  );
}
