import type { Metadata } from "next";
import "./globals.css";

export const metadata: Metadata = { title: "whenthen", description: "When this happens, do that." };

export default function RootLayout({ children }: { children: React.ReactNode }) {
  return (
    <html lang="en">
      <body className="bg-slate-50 text-slate-900 antialiased">{children}</body>
    </html>
  );
}
