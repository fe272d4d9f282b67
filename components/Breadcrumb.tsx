import Link from "next/link";

/** The "Section / item" line above a page title. */
export function Breadcrumb({ href, label, children }: { href: string; label: string; children?: React.ReactNode }) {
  return (
    <nav className="mb-1 text-sm text-slate-500">
      <Link href={href} className="hover:underline">
        {label}
      </Link>{" "}
      /{children ? " " : ""}
      {children}
    </nav>
  );
}
