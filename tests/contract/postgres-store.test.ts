import { randomBytes } from "node:crypto";
import { describe, it } from "vitest";
import { alertPolicy } from "@/lib/alerts/policy";
import { openPostgresStore } from "@/lib/db/store/postgres";
import type { Store } from "@/lib/db/store";
import { TEST_POSTGRES_URL, noPostgres } from "../helpers/postgres";
import { runStoreContract } from "./store";

/**
 * The store contract on PostgreSQL (TEST_POSTGRES_URL; .ci/run sets it). Each case gets a schema of
 * its own, created and migrated by the store and dropped when it closes; a peer is a second store
 * (its own pool, as another process would have) on the same schema.
 */
if (noPostgres) {
  describe("Store contract: postgres", () => it.skip(`every case (skipped: ${noPostgres})`, () => undefined));
} else {
  const schemaOf = new WeakMap<Store, string>();
  runStoreContract({
    name: "postgres",
    create: async () => {
      const schema = `contract_${Date.now().toString(36)}_${randomBytes(4).toString("hex")}`;
      const store = openPostgresStore({ url: TEST_POSTGRES_URL, schema, ownSchema: true, poolSize: 3, alertPolicy });
      await store.ready();
      schemaOf.set(store, schema);
      return store;
    },
    cleanup: (store) => store.close(),
    connectPeer: async (store) => {
      const peer = openPostgresStore({ url: TEST_POSTGRES_URL, schema: schemaOf.get(store)!, poolSize: 3, alertPolicy });
      await peer.ready();
      return peer;
    },
    skip: {
      // lib/db/store/types.ts: on PostgreSQL units of work run side by side (READ COMMITTED); the
      // row locks their statements take serialise the writes to the same rows, not whole callbacks.
      "two units of work never interleave":
        "PostgreSQL runs units of work concurrently; only their writes to the same rows are serialised, by row locks (the conflicting write here waits for the first commit)",
    },
  });
}

