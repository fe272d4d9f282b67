"use client";
import { useEffect, useId, useRef, useState } from "react";

/**
 * The applets list's trigger error mark: the message shows on hover, on keyboard focus
 * and on a tap (a phone has no hover, and Safari does not focus a tapped button); Escape, a second
 * tap or scrolling hides it. It is placed `fixed` under the mark, so the list's scroll box never
 * clips it, and it is the button's accessible description whether shown or not.
 */
export function TriggerErrorMark({ message }: { message: string }) {
  const id = useId();
  const button = useRef<HTMLButtonElement>(null);
  const [hovered, setHovered] = useState(false);
  const [focused, setFocused] = useState(false);
  const [pinned, setPinned] = useState(false);
  const [pos, setPos] = useState<{ left: number; top: number; width: number } | null>(null);
  const open = hovered || focused || pinned;
  useEffect(() => {
    if (!open) return;
    const place = () => {
      const r = button.current?.getBoundingClientRect();
      if (!r) return;
      const width = Math.min(288, window.innerWidth - 16);
      setPos({ left: Math.max(8, Math.min(r.left, window.innerWidth - width - 8)), top: r.bottom + 4, width });
    };
    place();
    const hide = () => {
      setHovered(false);
      setPinned(false);
    };
    window.addEventListener("scroll", hide, true);
    window.addEventListener("resize", place);
    return () => {
      window.removeEventListener("scroll", hide, true);
      window.removeEventListener("resize", place);
    };
  }, [open]);
  return (
    <span className="inline-flex" onMouseEnter={() => setHovered(true)} onMouseLeave={() => setHovered(false)}>
      <button
        ref={button}
        type="button"
        className="inline-flex items-center gap-1 rounded bg-red-50 px-1.5 py-0.5 text-xs font-medium text-red-800 ring-1 ring-red-200 hover:bg-red-100 focus:outline-none focus-visible:ring-2 focus-visible:ring-red-500"
        aria-describedby={id}
        aria-expanded={open}
        onClick={() => setPinned((p) => !p)}
        onFocus={() => setFocused(true)}
        onBlur={() => {
          setFocused(false);
          setPinned(false);
        }}
        onKeyDown={(e) => {
          if (e.key === "Escape") {
            setFocused(false);
            setPinned(false);
            setHovered(false);
          }
        }}
        data-testid="trigger-error-mark"
      >
        <span aria-hidden="true">⚠</span> Trigger error
      </button>
      <span
        id={id}
        role="tooltip"
        data-testid="trigger-error-message"
        hidden={!open || pos === null}
        style={pos ? { left: pos.left, top: pos.top, width: pos.width } : undefined}
        className="fixed z-30 rounded-md bg-slate-900 px-3 py-2 text-xs leading-snug font-normal break-words whitespace-normal text-white shadow-lg"
      >
        {message}
      </span>
    </span>
  );
}
