import type { Db } from "./db.js";

/**
 * One place of `max` per window of `windowMs` for `key`, in a table of
 * (key, count, window_started_at), taken in one statement: the window opens
 * with its first place and, once over, counting starts afresh. False, with
 * nothing taken, when none is left. Of any number of concurrent callers at
 * most `max` per window get true.
 */
export async function takeWindowedPlace(db: Db, table: string, key: string, max: number, now: number, windowMs: number): Promise<boolean> {
  if (max <= 0) return false;
  const cutoff = now - windowMs;
  // SET reads the row as it was before this statement; the WHERE lets the conflict update happen only under the budget.
  const rows: unknown[] = await db(table)
    .insert({ key, count: 1, window_started_at: now })
    .onConflict("key")
    .merge({
      count: db.raw(`CASE WHEN ??.window_started_at <= CAST(? AS BIGINT) THEN 1 ELSE ??.count + 1 END`, [table, cutoff, table]),
      window_started_at: db.raw(`CASE WHEN ??.window_started_at <= CAST(? AS BIGINT) THEN CAST(? AS BIGINT) ELSE ??.window_started_at END`, [table, cutoff, now, table]),
    })
    .where((q) => q.where(`${table}.window_started_at`, "<=", cutoff).orWhere(`${table}.count`, "<", max))
    .returning("count");
  return rows.length > 0;
}
