import Link from "next/link";
import { NavLink } from "@/components/NavLink";
import { HealthBanner } from "@/components/HealthBanner";
import { SignOutButton } from "@/components/SignOutButton";
import { healthAt } from "@/lib/api/stream";
import { healthBanner } from "@/lib/health";
import { services } from "@/lib/services";

/**
 * The signed-in shell. From `md` up: a left nav that stays in view. On a phone a 192px column
 * would leave too little for the page, so the same links become a top bar (brand and Sign out on
 * one row, the three links below) and the page gets the full width. Plain CSS: it works before
 * hydration. /setup and /login live outside this group, without nav.
 */
export default async function MainLayout({ children }: { children: React.ReactNode }) {
  // The banner as the web's health watch last saw it (lib/bus/health); read here before its first look.
  const { app } = services();
  const banner = app.bus.health() ?? (await healthBanner(app).catch(() => null));
  return (
    <div className="flex min-h-screen flex-col md:flex-row">
      {/* The aside stretches with the page (its background); the nav inside stays in view. */}
      <aside className="bg-slate-900 md:w-48 md:shrink-0">
        <div className="flex flex-wrap items-center gap-x-2 gap-y-1 px-3 py-2 md:sticky md:top-0 md:h-screen md:flex-col md:flex-nowrap md:items-stretch md:py-4">
          <Link href="/" className="px-3 py-1 text-lg font-semibold tracking-tight text-white md:mb-6 md:py-0">
            whenthen
          </Link>
          <nav className="order-last flex w-full gap-1 md:order-none md:flex-col" aria-label="Main">
            <NavLink href="/">Applets</NavLink>
            <NavLink href="/runs">Runs</NavLink>
            <NavLink href="/settings">Settings</NavLink>
          </nav>
          <div className="ml-auto md:mt-auto md:ml-0">
            <SignOutButton />
          </div>
        </div>
      </aside>
      <main id="main" tabIndex={-1} className="min-w-0 flex-1 px-4 py-4 md:px-8 md:py-6">
        <HealthBanner initial={banner && healthAt(banner, app.clock.now().getTime())} />
        {children}
      </main>
    </div>
  );
}
