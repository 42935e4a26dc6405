import type { Db } from "./db.js";

/**
 * The `jti` of every client assertion accepted (RFC 7523 §3: an assertion is
 * used once), kept until the assertion's `exp`; after that the assertion is
 * refused as expired anyway, and the cleanup job removes the row. Since an
 * assertion lives at most a few minutes, the table holds at most those
 * minutes' worth of accepted assertions.
 *
 * The contract (test/store/contract/tokens.spec.ts, every backend, "client assertion jtis"):
 * - atomic: useOnce() records a key in one conditional statement, so of any
 *   number of concurrent callers (on any instance) exactly one gets true
 *   ("lets exactly one of 50 concurrent uses of one jti through");
 * - a key whose row has expired may be used again ("takes a key again once its row has expired");
 * - expired rows are swept ("cleanup of expired rows").
 */
export class ClientAssertionJtiRepository {
  constructor(private readonly db: Db) {}

  /**
   * Record `key` as used until `expiresAt` (epoch ms). True when this call
   * recorded it; false when a row for it is still live at `now`.
   */
  async useOnce(key: string, expiresAt: number, now: number): Promise<boolean> {
    // An expired row of the same key is taken over; a live one stops the insert.
    const rows: unknown[] = await this.db("client_assertion_jtis")
      .insert({ key, expires_at: expiresAt })
      .onConflict("key")
      .merge({ expires_at: expiresAt })
      .where("client_assertion_jtis.expires_at", "<=", now)
      .returning("key");
    return rows.length === 1;
  }
}
