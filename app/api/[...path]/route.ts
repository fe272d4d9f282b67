import { services } from "@/lib/services";

/**
 * Every /api/* request that the lean ingress did not answer lands here and goes to the API
 * (lib/api, on Hono) that server.ts built: one database, one bus per process.
 */
export const dynamic = "force-dynamic";

const handle = (req: Request) => services().api.handle(req);
export { handle as GET, handle as POST, handle as PUT, handle as DELETE, handle as PATCH };
