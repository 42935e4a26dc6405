import type { Db } from "./db.js";

/**
 * Successful client registrations per key (a client address), in fixed
 * windows. The contract (test/store/contract/applications.spec.ts, every backend,
 * "registration counts"):
 * - atomic: reserve() takes one place of a key's budget in one statement, so
 *   concurrent callers never take more than `max` in a window ("lets exactly
 *   max of 40 concurrent reservations of one key through");
 * - a window that has ended starts afresh; release() gives a place back.
 */
export class RegistrationCountRepository {
  constructor(private readonly db: Db) {}

  /** One place of `max` per window of `windowMs`, taken in one statement; false (nothing taken) when none is left. */
  async reserve(key: string, max: number, now: number, windowMs: number): Promise<boolean> {
    if (max <= 0) return false;
    const cutoff = now - windowMs;
    // SET reads the row as it was before this statement.
    const rows: unknown[] = await this.db("registration_counts")
      .insert({ key, count: 1, window_started_at: now })
      .onConflict("key")
      .merge({
        count: this.db.raw("CASE WHEN registration_counts.window_started_at <= CAST(? AS BIGINT) THEN 1 ELSE registration_counts.count + 1 END", [cutoff]),
        window_started_at: this.db.raw(
          "CASE WHEN registration_counts.window_started_at <= CAST(? AS BIGINT) THEN CAST(? AS BIGINT) ELSE registration_counts.window_started_at END",
          [cutoff, now],
        ),
      })
      .where((q) => q.where("registration_counts.window_started_at", "<=", cutoff).orWhere("registration_counts.count", "<", max))
      .returning("count");
    return rows.length > 0;
  }

  /** Gives back a place reserve() took, for a registration that was then refused. */
  async release(key: string): Promise<void> {
    await this.db("registration_counts").where({ key }).where("count", ">", 0).update({ count: this.db.raw("count - 1") });
  }
}
