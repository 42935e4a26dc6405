import type { Knex } from "knex";
import { isPostgres, type Db } from "../../src/store/db.js";
import { eventually } from "./deadline.js";

/**
 * Resolves once another statement of `db` waits on the open transaction
 * `held`: on PostgreSQL, a backend that `held` blocks (a row it locked); on
 * SQLite, a caller queued for the one connection `held` keeps. For tests
 * that commit `held` only when a racing write is known to wait on it.
 */
export async function whenBlocking(db: Db, held: Knex.Transaction): Promise<void> {
  if (isPostgres(db)) {
    const { rows } = await held.raw("select pg_backend_pid() as pid");
    const pid = rows[0].pid as number;
    await eventually("a statement waiting on the held transaction", async () => {
      const waiting = await db.raw("select count(*)::int as n from pg_stat_activity where ? = any(pg_blocking_pids(pid))", [pid]);
      return waiting.rows[0].n > 0;
    });
    return;
  }
  const pool = db.client.pool as { numPendingAcquires(): number };
  await eventually("a caller queued for the held connection", () => pool.numPendingAcquires() > 0);
}
