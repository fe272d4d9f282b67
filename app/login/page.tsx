import type { Metadata } from "next";
import { CredentialsForm } from "./credentials-form";

export const metadata: Metadata = { title: "Sign in · whenthen" };

interface Props {
  searchParams: Promise<Record<string, string | string[] | undefined>>;
}

/** Reached only without a session: server.ts's page gate sends signed-in visitors on to `next`. */
export default async function LoginPage({ searchParams }: Props) {
  const next = (await searchParams).next;
  return (
    <main id="main" tabIndex={-1} className="flex min-h-screen items-center justify-center px-4">
      <div className="w-full max-w-sm rounded-lg border border-slate-200 bg-white p-6 shadow-sm">
        <h1 className="text-lg font-semibold">Sign in to whenthen</h1>
        <div className="mt-4">
          <CredentialsForm endpoint="/api/login" submitLabel="Sign in" next={typeof next === "string" ? next : undefined} passwordAutoComplete="current-password" />
        </div>
      </div>
    </main>
  );
}
