"use client";
import Link from "next/link";
import { usePathname } from "next/navigation";

/** Applets is active on / and /applets/*; the others on their own prefix. */
export function NavLink({ href, children }: { href: string; children: React.ReactNode }) {
  const path = usePathname();
  const active = href === "/" ? path === "/" || path.startsWith("/applets") : path.startsWith(href);
  return (
    <Link
      href={href}
      aria-current={active ? "page" : undefined}
      className={`block rounded px-3 py-2 text-sm font-medium ${active ? "bg-slate-700 text-white" : "text-slate-300 hover:bg-slate-800 hover:text-white"}`}
    >
      {children}
    </Link>
  );
}
