import sqlite3 from "sqlite3";
import { openSqliteConnection } from "./db.js";

/** How often the WAL is copied back into the database file. */
const CHECKPOINT_INTERVAL_MS = 100;

export interface WalCheckpoints {
  stop(): Promise<void>;
}

/**
 * Copies a SQLite file's WAL back into the database every 100 ms, from a
 * connection of its own, off the write path.
 *
 * Why: by default the connection whose commit takes the WAL past 1,000
 * pages copies them into the file and syncs it before that commit returns.
 * Under client_credentials load that was ~20 times a second, and every
 * request waiting on the group commit waited with it (3,253-3,539 token
 * responses a second against 3,887-3,948 with this, docs/performance.md).
 * A PASSIVE checkpoint blocks neither readers nor the writer; one that
 * finds another checkpoint running (another instance's) gives up at once,
 * and the next tick tries again. The writer still checkpoints by itself
 * past 10,000 pages (db.ts), should this fall behind.
 */
export function startWalCheckpoints(file: string, onError: (err: unknown) => void): WalCheckpoints {
  let connection: Promise<sqlite3.Database> | undefined;
  let running: Promise<void> | undefined;
  let failing = false;
  const checkpoint = async () => {
    connection ??= openSqliteConnection(file, sqlite3.OPEN_READWRITE).catch((err) => {
      connection = undefined;
      throw err;
    });
    const db = await connection;
    await new Promise<void>((resolve, reject) =>
      db.run("PRAGMA wal_checkpoint(PASSIVE)", (err: (Error & { code?: string }) | null) =>
        err && err.code !== "SQLITE_BUSY" ? reject(err) : resolve(),
      ),
    );
  };
  const timer = setInterval(() => {
    running ??= checkpoint()
      .then(
        () => (failing = false),
        (err) => {
          if (!failing) onError(err); // once per spell of failures, not ten times a second
          failing = true;
        },
      )
      .then(() => (running = undefined));
  }, CHECKPOINT_INTERVAL_MS);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
      const db = await connection?.catch(() => undefined);
      if (db) await new Promise<void>((resolve) => db.close(() => resolve()));
    },
  };
}
