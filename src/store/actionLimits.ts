import type { Db } from "./db.js";

/**
 * Budgets of actions per key (sign-ups per client address, reset requests per
 * account and per address) in fixed windows: the window opens with its first
 * action and lasts `windowMs`; after it, counting starts afresh.
 *
 * The contract (test/store/contract/users.spec.ts, every backend, "action limits"):
 * - atomic: take() counts one action and decides in one statement, so of any
 *   number of concurrent callers exactly `max` per window get true ("lets
 *   exactly max of 40 concurrent actions through, and starts afresh after
 *   the window");
 * - unique: one row per key, the conflict target of take();
 * - stale rows are swept by the cleanup job (store/cleanup.ts).
 */
export class ActionLimitRepository {
  constructor(private readonly db: Db) {}

  /** Count one action of `key`; false (nothing counted) when `max` were already taken in this window. */
  async take(key: string, max: number, now: number, windowMs: number): Promise<boolean> {
    if (max <= 0) return false;
    const cutoff = now - windowMs;
    // SET reads the row as it was before this statement; the WHERE lets the conflict update happen only under the budget.
    const rows: unknown[] = await this.db("action_limits")
      .insert({ key, count: 1, window_started_at: now })
      .onConflict("key")
      .merge({
        count: this.db.raw("CASE WHEN action_limits.window_started_at <= CAST(? AS BIGINT) THEN 1 ELSE action_limits.count + 1 END", [cutoff]),
        window_started_at: this.db.raw(
          "CASE WHEN action_limits.window_started_at <= CAST(? AS BIGINT) THEN CAST(? AS BIGINT) ELSE action_limits.window_started_at END",
          [cutoff, now],
        ),
      })
      .where((q) => q.where("action_limits.window_started_at", "<=", cutoff).orWhere("action_limits.count", "<", max))
      .returning("count");
    return rows.length > 0;
  }
}
