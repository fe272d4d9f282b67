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
      <body className="bg-slate-50 text-slate-900 antialiased">{children}</body>
    </html>
  );
}
