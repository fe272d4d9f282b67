import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { alertPolicy } from "@/lib/alerts/policy";
import { openSqliteStore, type SqliteStore } from "@/lib/db/store/sqlite";
import type { Store } from "@/lib/db/store";
import { runStoreContract } from "./store";

const dirs = new Map<Store, string>();

runStoreContract({
  name: "sqlite (a file on disk in a temp dir)",
  create: async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "whenthen-store-contract-"));
    const store = openSqliteStore({ file: path.join(dir, "app.db"), alertPolicy });
    dirs.set(store, dir);
    return store;
  },
  cleanup: async (store) => {
    await store.close();
    rmSync(dirs.get(store)!, { recursive: true, force: true });
    dirs.delete(store);
  },
  // A second connection to the same file, as a second worker process has.
  connectPeer: async (store) => openSqliteStore({ file: (store as SqliteStore).db.sqlite.name, alertPolicy }),
});
