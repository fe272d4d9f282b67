import type { Metadata } from "next";
import "./globals.css";

export const metadata: Metadata = { title: "whenthen", description: "When this happens, do that." };
// Every page carries a fresh CSP script nonce (lib/http/security-headers), which Next can only
// stamp on a page it renders per request: a prerendered page (the 404) would have its scripts
// blocked by the policy.
export const dynamic = "force-dynamic";

export default function RootLayout({ children }: { children: React.ReactNode }) {
  return (
    <html lang="en">
      <body className="bg-slate-50 text-slate-900 antialiased">
        {/* The first thing a keyboard reaches on every page; every page's <main> is #main. */}
        <a
          href="#main"
          className="sr-only rounded-md bg-white px-3 py-2 text-sm font-medium text-indigo-700 shadow ring-2 ring-indigo-600 focus:not-sr-only focus:fixed focus:top-2 focus:left-2 focus:z-50"
          data-testid="skip-link"
        >
          Skip to content
        </a>
        {children}
      </body>
    </html>
  );
}
