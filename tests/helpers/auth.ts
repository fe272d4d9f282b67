import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { createApi, type Api } from "@/lib/api";
import { createApp, type App } from "@/lib/app";
import { createAppletService } from "@/lib/applets/service";
import { createAuth, type Auth, type SessionUser } from "@/lib/auth";
import { ManualClock } from "@/lib/core/clock";
import { silentLogger } from "@/lib/core/log";
import { createPageGate } from "@/lib/http/page-gate";

export interface BootedAuth {
  dir: string;
  app: App;
  auth: Auth;
  api: Api;
  clock: ManualClock;
  /** A real node:http server with the page gate in front of a stub "Next" answering 200. */
  server: Server;
  base: string;
}

/** Boots the web side as server.ts does, with nothing in the environment but DATA_DIR and what a test adds. */
export async function bootAuth(env: Record<string, string> = {}, dir = mkdtempSync(path.join(tmpdir(), "whenthen-auth-"))): Promise<BootedAuth> {
  const clock = new ManualClock("2026-03-01T12:00:00.000Z");
  const app = createApp({ env: { DATA_DIR: dir, ...env }, clock, log: silentLogger });
  const auth = createAuth(app);
  await auth.ensureAdminFromEnv();
  const api = createApi({ app, applets: createAppletService(app), auth });
  const gate = createPageGate(auth);
  const server = createServer((req, res) => {
    void gate(req, res).then((answered) => {
      if (answered) return;
      res.writeHead(200, { "content-type": "text/plain" });
      res.end(`next: ${req.url}`);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { dir, app, auth, api, clock, server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

export async function shutAuth(b: BootedAuth): Promise<void> {
  await new Promise((r) => b.server.close(r));
  void b.app.close();
  rmSync(b.dir, { recursive: true, force: true });
}

/** The user a test identity signs every request in as. */
export const TEST_USER: SessionUser = { userId: "test-user", email: "test@example.com" };

/**
 * An explicit identity for tests that are not about sign-in: the real auth (Host, Origin and
 * content-type checks, setup, login) except that every request carries `user`. Production code
 * has no way to skip the session guard; a test says who is asking instead.
 */
export function testIdentity(app: Pick<App, "store" | "config" | "clock" | "log">, user: SessionUser = TEST_USER): Auth {
  const auth = createAuth(app);
  return { ...auth, sessionOf: async () => user, sessionFromCookieHeader: async () => user };
}
