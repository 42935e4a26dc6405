import type { Db } from "./db.js";
import { takeWindowedPlace } from "./windowedCounts.js";

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
  take(key: string, max: number, now: number, windowMs: number): Promise<boolean> {
    return takeWindowedPlace(this.db, "action_limits", key, max, now, windowMs);
  }
}
