import { hasTag } from "../applets/tags";
/**
 * The applets list's search, filters, sort and pages, pure: the page passes the applets and their
 * run stats, tests pass plain objects.
 */
export interface ListedApplet {
  id: string;
  name: string;
  enabled: boolean;
  triggerType: string;
  createdAt: string;
  /** The latest run's status, if any. */
  lastStatus: string | null;
  lastAt: string | null;
  /** The trigger's last error (a feed that cannot be read), if any. */
  triggerError: string | null;
  /** How long ago its next poll or schedule slot was due, when it is overdue (lib/core/overdue). */
  overdueMs?: number | null;
  /** Runs of the last 24 h that ended failed or dead. */
  failed24h?: number;
  /** Why auto-pause disabled it ("Paused after 5 failed runs in a row"), while it stays paused. */
  pausedReason?: string | null;
  /** Expected activity: why it is quiet (lib/fires/quiet), or null. */
  quiet?: string | null;
  /** Its tags; an applet listed without them matches no tag filter. */
  tags?: readonly string[];
}

export interface AppletListQuery {
  q?: string;
  trigger?: string;
  status?: "enabled" | "disabled" | "paused" | "attention" | "quiet";
  sort?: "name" | "last_run" | "created";
  page?: number;
  /** Only applets with this tag (without case). */
  tag?: string;
}

export const APPLETS_PAGE_SIZE = 50;

/** Every tag in use, each once (the first spelling), sorted without case: the tag filter's choices. */
export function tagsInUse(all: readonly { tags?: readonly string[] }[]): string[] {
  const byKey = new Map<string, string>();
  for (const a of all) for (const t of a.tags ?? []) if (!byKey.has(t.toLowerCase())) byKey.set(t.toLowerCase(), t);
  return [...byKey.values()].sort((x, y) => x.localeCompare(y, undefined, { sensitivity: "base" }));
}

/**
 * Needs attention: its last run failed, died or is retrying after a failed attempt, its trigger
 * reports an error, its next check is overdue, it is quiet, or auto-pause stopped it.
 */
export const needsAttention = (a: ListedApplet): boolean =>
  a.lastStatus === "failed" || a.lastStatus === "dead" || a.lastStatus === "retrying" || a.triggerError !== null || (a.overdueMs ?? null) !== null || Boolean(a.pausedReason) || Boolean(a.quiet);

export function listApplets<T extends ListedApplet>(all: T[], query: AppletListQuery): { items: T[]; total: number; page: number; pages: number } {
  const q = query.q?.trim().toLowerCase();
  let items = all.filter(
    (a) =>
      (!q || a.name.toLowerCase().includes(q)) &&
      (!query.trigger || a.triggerType === query.trigger) &&
      (!query.tag || hasTag(a.tags ?? [], query.tag)) &&
            (query.status === "enabled"
        ? a.enabled
        : query.status === "disabled"
          ? !a.enabled
          : query.status === "paused"
            ? Boolean(a.pausedReason)
            : query.status === "attention"
              ? needsAttention(a)
              : query.status === "quiet"
                ? Boolean(a.quiet)
                : true),
  );
  const byName = (x: T, y: T) => x.name.localeCompare(y.name, undefined, { sensitivity: "base" }) || x.id.localeCompare(y.id);
  if (query.sort === "last_run") items = [...items].sort((x, y) => (y.lastAt ?? "").localeCompare(x.lastAt ?? "") || byName(x, y));
  else if (query.sort === "created") items = [...items].sort((x, y) => y.createdAt.localeCompare(x.createdAt) || byName(x, y));
  else items = [...items].sort(byName);
  const pages = Math.max(1, Math.ceil(items.length / APPLETS_PAGE_SIZE));
  const page = Math.min(Math.max(1, Math.floor(query.page ?? 1)), pages);
  return { items: items.slice((page - 1) * APPLETS_PAGE_SIZE, page * APPLETS_PAGE_SIZE), total: items.length, page, pages };
}
