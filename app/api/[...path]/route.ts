import type { Api } from "@/lib/api/router";

/**
 * Every /api/* request that the lean ingress did not answer lands here and goes to the
 * framework-free API built by server.ts (one database, one bus per process).
 */
export const dynamic = "force-dynamic";

function api(): Api {
  const api = (globalThis as { __whenthenApi?: Api }).__whenthenApi;
  if (!api) throw new Error("whenthen: the API is not initialised; start the app with `pnpm dev` (server.ts)");
  return api;
}

const handle = (req: Request) => api().handle(req);
export { handle as GET, handle as POST, handle as PUT, handle as DELETE, handle as PATCH };
