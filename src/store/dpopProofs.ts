import type { Db } from "./db.js";

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
