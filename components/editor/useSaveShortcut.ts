import { useEffect, useRef } from "react";

/**
 * Ctrl+S (Cmd+S on a Mac) saves in the editor instead of the browser's "Save page as".
 * `save` is read at key time, so the hook never needs re-registering; a press while `enabled` is
 * false (nothing to save yet, or a save in flight) is still kept from the browser.
 */
export function useSaveShortcut(save: () => void, enabled: boolean): void {
  const latest = useRef({ save, enabled });
  useEffect(() => {
    latest.current = { save, enabled };
  });
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (!(e.ctrlKey || e.metaKey) || e.altKey || e.shiftKey || e.key.toLowerCase() !== "s") return;
      e.preventDefault();
      if (latest.current.enabled) latest.current.save();
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, []);
}
