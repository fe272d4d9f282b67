import Link from "next/link";
import { NavLink } from "@/components/NavLink";
import { SignOutButton } from "@/components/SignOutButton";

/** The signed-in shell: left nav and the page. /setup and /login live outside this group, without nav. */
export default function MainLayout({ children }: { children: React.ReactNode }) {
  return (
    <div className="flex min-h-screen">
      {/* The aside stretches with the page (its background); the nav inside stays in view. */}
      <aside className="w-48 shrink-0 bg-slate-900">
        <div className="sticky top-0 flex h-screen flex-col px-3 py-4">
          <Link href="/" className="mb-6 px-3 text-lg font-semibold tracking-tight text-white">
            whenthen
          </Link>
          <nav className="flex flex-col gap-1" aria-label="Main">
            <NavLink href="/">Applets</NavLink>
            <NavLink href="/runs">Runs</NavLink>
            <NavLink href="/settings">Settings</NavLink>
          </nav>
          <div className="mt-auto">
            <SignOutButton />
          </div>
        </div>
      </aside>
      <main className="min-w-0 flex-1 px-8 py-6">{children}</main>
    </div>
  );
}
