import { Hono } from "hono";
import { methodNotAllowed } from "hono/method-not-allowed";
import { publicRoute, sessionOnly, sessionOnlyReason, type ApiDeps, type ApiEnv } from "./env";
import { apiErrors, noStore, sessionGuard } from "./middleware";
import { alertRoutes } from "./routes/alerts";
import { appletRoutes } from "./routes/applets";
import { runRoutes } from "./routes/runs";
import { dryRunRoutes } from "./dry-run";
import { retryRoutes } from "./retry";
import { waitRoutes } from "./routes/waits";
import { secretRoutes } from "./routes/secrets";
import { sessionRoutes } from "./routes/session";
import { settingsRoutes } from "./routes/settings";
import { tokenRoutes } from "./routes/tokens";
import { transferRoutes } from "./routes/transfer";

export type { ApiDeps } from "./env";

/**
 * The session API on Hono (see docs/architecture.md, "The API"): Web Request in, Response out.
 * Next's catch-all route (app/api/[...path]/route.ts) hands requests to `handle`; tests call it
 * directly. The webhook ingress is not here: it stays on server.ts's lean node:http path.
 */
function build(deps: ApiDeps) {
  const hono = new Hono<ApiEnv>({ strict: false });
  hono.onError(apiErrors(deps.app.log));
  hono.notFound((c) => c.json({ error: "not found" }, 404));
  hono.use(
    "*",
    methodNotAllowed({ app: hono, onMethodNotAllowed: (c, methods) => c.json({ error: `method ${c.req.method} not allowed` }, 405, { allow: methods.join(", ") }) }),
  );
  hono.use("*", noStore);
  // Always mounted: there is no way to build this API without its session guard.
  hono.use("*", sessionGuard(deps.auth));
  return hono
    .route("/", sessionRoutes(deps))
    .route("/", settingsRoutes(deps))
    .route("/", alertRoutes(deps))
    .route("/", appletRoutes(deps))
    .route("/", runRoutes(deps))
    .route("/", dryRunRoutes(deps))
    .route("/", retryRoutes(deps))
    .route("/", waitRoutes(deps))
    .route("/", secretRoutes(deps))
    .route("/", tokenRoutes(deps))
    .route("/", transferRoutes(deps));
}

/** The route types the browser's typed client (`hc<ApiRoutes>`) is built from. */
export type ApiRoutes = ReturnType<typeof build>;

export interface ApiRoute {
  method: string;
  path: string;
  /** Reachable without a session (marked `publicRoute` where it is declared). */
  public: boolean;
  /** Reachable with a signed-in session only, never an API token (marked `sessionOnly`). */
  sessionOnly: boolean;
}

export interface Api {
  handle(req: Request): Promise<Response>;
  /** Every route, from the router itself: the auth test walks this, so a new route cannot be left out. */
  routes(): ApiRoute[];
}

export function createApi(deps: ApiDeps): Api {
  // The type requires it; this is for callers the type does not reach (plain JS, a cast).
  if (!deps.auth) throw new Error("createApi: auth is required; tests that are not about sign-in pass testIdentity() from tests/helpers/auth.ts");
  const hono = build(deps);
  return {
    handle: async (req) => hono.fetch(req),
    routes() {
      const byKey = new Map<string, ApiRoute>();
      for (const r of hono.routes) {
        if (r.method === "ALL") continue;
        const key = `${r.method} ${r.path}`;
        const entry = byKey.get(key) ?? { method: r.method, path: r.path, public: false, sessionOnly: false };
        if (r.handler === publicRoute) entry.public = true;
        if (sessionOnlyReason(r.handler) !== undefined) entry.sessionOnly = true;
        byKey.set(key, entry);
      }
      return [...byKey.values()];
    },
  };
}

export { publicRoute, sessionOnly };
