import type { Metadata } from "next";
import { redirect } from "next/navigation";
import { services } from "@/lib/services";
import { PASSWORD_MIN_LENGTH } from "@/lib/auth/policy";
import { CredentialsForm } from "../login/credentials-form";

export const metadata: Metadata = { title: "Set up · whenthen" };
// Whether the admin exists is decided per request, never at build time.
export const dynamic = "force-dynamic";

/** First run only: creates the one admin. server.ts's page gate already hides it once a user exists; this is the same rule where the page renders. */
export default async function SetupPage() {
  if (await services().auth.hasUser()) redirect("/login");
  return (
    <main id="main" tabIndex={-1} className="flex min-h-screen items-center justify-center px-4">
      <div className="w-full max-w-sm rounded-lg border border-slate-200 bg-white p-6 shadow-sm">
        <h1 className="text-lg font-semibold">Set up whenthen</h1>
        <p className="mt-1 text-sm text-slate-600">Create the admin account. This page goes away once it exists.</p>
        <div className="mt-4">
          <CredentialsForm
            endpoint="/api/setup"
            submitLabel="Create admin"
            passwordAutoComplete="new-password"
            passwordHint={`At least ${PASSWORD_MIN_LENGTH} characters.`}
          />
        </div>
      </div>
    </main>
  );
}
