import type { Db } from "./db.js";

export interface LoginFailureRecord {
  key: string;
  failures: number;
  windowStartedAt: number;
  lockedUntil: number;
}

/**
 * The contract (test/store/contract/users.spec.ts, every backend, "login failures"):
 * - atomic: reserveFailure() takes one failure from a key's budget in one
 *   statement, so concurrent callers never take more than `max`, and the one
 *   that spends it locks the key ("lets exactly max of 50 concurrent
 *   reservations of one key through, ...");
 * - undefined: reserveFailure() while the key is locked ("refuses while
 *   locked, and starts a new window once the lock is over"), and find() of
 *   an unknown or cleared key ("gives a failure back, lifting the lock it
 *   began, and clears a key", which proves refundFailure() too);
 * - unique: one row per key, the conflict target of reserveFailure();
 * - stale rows are swept by the cleanup job and deleteStale(), not yet proven here.
 */
export class LoginFailureRepository {
  constructor(private readonly db: Db) {}

  async find(key: string): Promise<LoginFailureRecord | undefined> {
    const r = await this.db("login_failures").where({ key }).first();
    if (!r) return undefined;
    return {
      key: r.key,
      failures: Number(r.failures),
      windowStartedAt: Number(r.window_started_at),
      lockedUntil: Number(r.locked_until),
    };
  }

  async clear(key: string): Promise<void> {
    await this.db("login_failures").where({ key }).delete();
  }

  /**
   * Take one failure from the key's budget of `max` per window of
   * `windowMs`, in one statement, before the check it pays for: concurrent
   * callers can never take more than `max`. Returns the count with this
   * failure, or undefined (nothing taken) while the key is locked. The
   * failure that spends the budget locks the key for `windowMs`; a window
   * that has ended starts afresh.
   */
  async reserveFailure(key: string, max: number, now: number, windowMs: number): Promise<number | undefined> {
    const cutoff = now - windowMs;
    const lockedUntil = now + windowMs;
    // SET reads the row as it was before this statement; the first CASE is the new count.
    const rows: Array<{ failures: number | string }> = await this.db("login_failures")
      .insert({ key, failures: 1, window_started_at: now, locked_until: max <= 1 ? lockedUntil : 0 })
      .onConflict("key")
      .merge({
        failures: this.db.raw(
          "CASE WHEN login_failures.window_started_at <= CAST(? AS BIGINT) THEN 1 ELSE login_failures.failures + 1 END",
          [cutoff],
        ),
        window_started_at: this.db.raw(
          "CASE WHEN login_failures.window_started_at <= CAST(? AS BIGINT) THEN CAST(? AS BIGINT) ELSE login_failures.window_started_at END",
          [cutoff, now],
        ),
        locked_until: this.db.raw(
          "CASE WHEN (CASE WHEN login_failures.window_started_at <= CAST(? AS BIGINT) THEN 1 ELSE login_failures.failures + 1 END) >= ? THEN CAST(? AS BIGINT) ELSE CAST(0 AS BIGINT) END",
          [cutoff, max, lockedUntil],
        ),
      })
      .where("login_failures.locked_until", "<=", now)
      .andWhere((q) => q.where("login_failures.window_started_at", "<=", cutoff).orWhere("login_failures.failures", "<", max))
      .returning("failures");
    return rows[0] === undefined ? undefined : Number(rows[0].failures);
  }

  /** Give back a failure `reserveFailure` took (its check passed); a lock it began is lifted. */
  async refundFailure(key: string, max: number): Promise<void> {
    await this.db("login_failures")
      .where({ key })
      .where("failures", ">", 0)
      .update({
        failures: this.db.raw("failures - 1"),
        locked_until: this.db.raw("CASE WHEN failures - 1 < ? THEN CAST(0 AS BIGINT) ELSE locked_until END", [max]),
      });
  }

  /** Drop rows whose counting window began at or before `windowCutoff` and whose lock is over. */
  async deleteStale(windowCutoff: number, now: number): Promise<void> {
    await this.db("login_failures")
      .where("window_started_at", "<=", windowCutoff)
      .where("locked_until", "<=", now)
      .delete();
  }
}
