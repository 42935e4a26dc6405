import type { Db } from "./db.js";

/**
 * The `jti` of every DPoP proof accepted (RFC 9449 §11.1: a proof is used
 * once), kept until the proof's iat window ends; after that the proof is
 * refused as stale anyway, and the cleanup job removes the row. Since a
 * proof is accepted for about a minute, the table holds about a minute's
 * worth of accepted proofs.
 *
 * The contract (test/store/contract/dpop.spec.ts, every backend, "DPoP proof jtis"):
 * - atomic: useOnce() records a key in one conditional statement, so of any
 *   number of concurrent callers (on any instance) exactly one gets true
 *   ("lets exactly one of 50 concurrent uses of one jti through");
 * - a key whose row has expired may be used again ("takes a key again once its row has expired");
 * - expired rows are swept ("cleanup of expired rows").
 */
export class DPoPProofJtiRepository {
  constructor(private readonly db: Db) {}

  /**
   * Record `key` as used until `expiresAt` (epoch ms). True when this call
   * recorded it; false when a row for it is still live at `now`.
   */
  async useOnce(key: string, expiresAt: number, now: number): Promise<boolean> {
    // An expired row of the same key is taken over; a live one stops the insert.
    const rows: unknown[] = await this.db("dpop_proof_jtis")
      .insert({ key, expires_at: expiresAt })
      .onConflict("key")
      .merge({ expires_at: expiresAt })
      .where("dpop_proof_jtis.expires_at", "<=", now)
      .returning("key");
    return rows.length === 1;
  }
}

/**
 * The secret DPoP nonces (RFC 9449 §8) are made with, shared by every
 * instance through the database.
 *
 * The contract (test/store/contract/dpop.spec.ts, every backend, "DPoP nonce secret"):
 * - one value: of concurrent first calls offering different candidates, all
 *   get the same stored value, and later calls keep it ("agrees on one
 *   secret among concurrent first calls").
 */
export class DPoPNonceSecretRepository {
  constructor(private readonly db: Db) {}

  /** The stored secret; `candidate` is stored when there is none yet. */
  async secret(candidate: string, now: number): Promise<string> {
    await this.db("dpop_nonce_secrets").insert({ name: "nonce", secret: candidate, created_at: now }).onConflict("name").ignore();
    const row = await this.db("dpop_nonce_secrets").where({ name: "nonce" }).first("secret");
    return String(row.secret);
  }
}
