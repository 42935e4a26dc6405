import { isPostgres, type Db } from "./db.js";
import type { ExternalKey } from "./federatedIdentities.js";
import { endUserAccess } from "./revocations.js";

/** What unlinking an external account did: unlinked, no such link of this user, or refused as the user's last way to sign in. */
export type UnlinkOutcome = "unlinked" | "not_found" | "last_sign_in";

/**
 * The changes a signed-in user makes to their own account (the account page,
 * issue #46 §5) that must be decided in one statement or one transaction.
 *
 * The contract (test/store/contract/ownAccounts.spec.ts, every backend):
 * - compare-and-set: changePassword() sets the new hash only while the old
 *   one is still stored, so of concurrent changes from one password exactly
 *   one wins; with it, in the same transaction, the user's other sessions
 *   end, every refresh and access token is revoked and unredeemed codes are
 *   dropped, the session named `keep` stays ("changes the password once,
 *   ending the other sessions and every refresh and access token");
 * - unlink() never leaves a user without a way to sign in: a user with no
 *   password and no passkey keeps their last link, even under concurrent
 *   unlinks of two links (the user's row is locked first on PostgreSQL;
 *   SQLite runs one writer at a time) ("never unlinks the last way to sign in, even concurrently");
 * - noteMfaSignIn() keeps one row per user and application, and
 *   requiredMfaApplications() lists the names of those whose policy is
 *   `required` now ("lists the required applications a user signed in to").
 */
export class OwnAccountRepository {
  constructor(private readonly db: Db) {}

  async changePassword(userId: string, expectedHash: string, newHash: string, keep: string | undefined, at: number): Promise<boolean> {
    return this.db.transaction(async (trx) => {
      const changed = await trx("users").where({ id: userId, password_hash: expectedHash }).update({ password_hash: newHash, updated_at: at });
      if (changed !== 1) return false;
      // The other sessions end as every session does: their applications are told (back-channel logout).
      await endUserAccess(trx, userId, at, "password_changed", keep);
      return true;
    });
  }

  async unlink(userId: string, key: ExternalKey): Promise<UnlinkOutcome> {
    return this.db.transaction(async (trx) => {
      // Two unlinks at once must not both see "another link is left".
      const user = isPostgres(this.db) ? await trx("users").where({ id: userId }).forUpdate().first("password_hash") : await trx("users").where({ id: userId }).first("password_hash");
      const link = { user_id: userId, provider: key.provider, external_id_type: key.externalIdType, external_id: key.externalId };
      if (!user || !(await trx("federated_identities").where(link).first("provider"))) return "not_found";
      if (!user.password_hash) {
        const [links] = await trx("federated_identities").where({ user_id: userId }).count<{ n: number | string }[]>({ n: "*" });
        const passkey = await trx("user_factors").where({ user_id: userId, type: "passkey", confirmed: true }).first("id");
        if (Number(links?.n ?? 0) <= 1 && !passkey) return "last_sign_in";
      }
      return (await trx("federated_identities").where(link).delete()) === 1 ? "unlinked" : "not_found";
    });
  }

  async noteMfaSignIn(userId: string, clientId: string, at: number): Promise<void> {
    await this.db("mfa_sign_ins").insert({ user_id: userId, client_id: clientId, signed_in_at: at }).onConflict(["user_id", "client_id"]).merge(["signed_in_at"]);
  }

  async requiredMfaApplications(userId: string): Promise<string[]> {
    const rows = await this.db("mfa_sign_ins as s")
      .join("applications as a", "a.client_id", "s.client_id")
      .where({ "s.user_id": userId, "a.mfa": "required" })
      .orderBy("a.name")
      .select("a.name");
    return rows.map((r: { name: string }) => r.name);
  }
}
