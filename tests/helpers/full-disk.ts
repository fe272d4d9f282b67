import { spawnSync } from "node:child_process";
import { closeSync, mkdirSync, mkdtempSync, openSync, readdirSync, rmSync, writeSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Sqlite } from "@/lib/db/store/sqlite/client";

/**
 * A real full disk: a small tmpfs mounted for the test (needs root, or CAP_SYS_ADMIN), filled with
 * a file until the kernel answers ENOSPC, and freed again by deleting that file.
 */
export interface SmallDisk {
  dir: string;
  /** Writes filler until the disk is full. */
  fill(): void;
  /** Deletes the filler: writes succeed again. */
  free(): void;
  /** Unmounts and removes the mount point. */
  cleanup(): void;
}

/** A mounted small disk, or the reason there cannot be one here (for `test.skipIf`). */
export function mountSmallDisk(sizeMb = 16): SmallDisk | { unavailable: string } {
  const dir = mkdtempSync(path.join(os.tmpdir(), "whenthen-disk-"));
  const mounted = spawnSync("mount", ["-t", "tmpfs", "-o", `size=${sizeMb}m`, "tmpfs", dir], { encoding: "utf8" });
  if (mounted.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    return { unavailable: `cannot mount a tmpfs here (${(mounted.stderr || mounted.error?.message || "mount failed").trim()})` };
  }
  const fillers = path.join(dir, "fillers");
  let n = 0;
  return {
    dir,
    fill() {
      mkdirSync(fillers, { recursive: true });
      const fd = openSync(path.join(fillers, `filler-${n++}`), "w");
      const chunk = Buffer.alloc(64 * 1024, 1);
      try {
        for (;;) writeSync(fd, chunk);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "ENOSPC") throw err;
      } finally {
        closeSync(fd);
      }
      // The last partial blocks: down to single bytes, so not even one more page fits.
      const fd2 = openSync(path.join(fillers, `filler-${n++}`), "w");
      try {
        for (let size = 32 * 1024; size >= 1; size = Math.floor(size / 2)) {
          try {
            for (;;) writeSync(fd2, Buffer.alloc(size, 1));
          } catch (err) {
            if ((err as NodeJS.ErrnoException).code !== "ENOSPC") throw err;
          }
        }
      } finally {
        closeSync(fd2);
      }
    },
    free() {
      for (const f of safeList(fillers)) rmSync(path.join(fillers, f), { force: true });
    },
    cleanup() {
      spawnSync("umount", ["-l", dir]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const safeList = (dir: string): string[] => {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
};

export const isSmallDisk = (d: SmallDisk | { unavailable: string }): d is SmallDisk => !("unavailable" in d);

/**
 * Where no tmpfs can be mounted: a commit failure injected at the statement layer. A temporary
 * trigger on the connection adds a row that breaks a deferred foreign key to every write of
 * `tables`, so SQLite refuses the COMMIT itself: the same moment a full disk fails it, after an
 * `UPDATE … RETURNING` has already produced its row. Returns the function that removes it.
 */
export function injectCommitFailure(sqlite: Sqlite, tables: string[]): () => void {
  sqlite.exec(`CREATE TEMP TABLE IF NOT EXISTS fault_parent (id INTEGER PRIMARY KEY);
    CREATE TEMP TABLE IF NOT EXISTS fault_child (parent INTEGER REFERENCES fault_parent(id) DEFERRABLE INITIALLY DEFERRED);`);
  const triggers: string[] = [];
  for (const table of tables) {
    for (const op of ["INSERT", "UPDATE", "DELETE"]) {
      const name = `fault_${table}_${op.toLowerCase()}`;
      sqlite.exec(`CREATE TEMP TRIGGER ${name} AFTER ${op} ON main.${table} BEGIN INSERT INTO fault_child VALUES (1); END;`);
      triggers.push(name);
    }
  }
  return () => {
    for (const name of triggers) sqlite.exec(`DROP TRIGGER IF EXISTS temp.${name}`);
  };
}
