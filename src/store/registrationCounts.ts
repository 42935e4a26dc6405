import type { Db } from "./db.js";
import { takeWindowedPlace } from "./windowedCounts.js";

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
  reserve(key: string, max: number, now: number, windowMs: number): Promise<boolean> {
    return takeWindowedPlace(this.db, "registration_counts", key, max, now, windowMs);
  }

  /** Gives back a place reserve() took, for a registration that was then refused. */
  async release(key: string): Promise<void> {
    await this.db("registration_counts").where({ key }).where("count", ">", 0).update({ count: this.db.raw("count - 1") });
  }
}
