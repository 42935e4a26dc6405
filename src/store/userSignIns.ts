import type { Db } from "./db.js";
import { endUserAccess } from "./revocations.js";
import { sessionFromRow, type SessionRecord } from "./sessions.js";
import { endSessions } from "./backchannelLogouts.js";
import { revokeFamily } from "./tokens.js";

/** A live refresh token as administration sees it: its grant (family), never its hash. */
export interface RefreshGrantRecord {
  familyId: string;
  clientId: string;
  /** The application's name; undefined once it is deleted. */
  applicationName?: string;
  scope: string;
  authTime: number;
  issuedAt: number;
  expiresAt: number;
}

/**
 * A user's sign-ins for administration: browser sessions and the refresh
 * tokens applications hold, over the sessions and refresh_tokens tables
 * (both indexed by user). What revokes them is revocations.ts's and
 * tokens.ts's, as everywhere else. Times are epoch ms.
 *
 * The contract (test/store/contract/sessions.spec.ts, every backend, "a user's
 * sign-ins, for administration"):
 * - only live rows are listed (sessions unexpired; refresh tokens
 *   unconsumed, unrevoked, unexpired: one per grant), newest first
 *   ("lists live sessions and the live refresh token of each grant, ...");
 * - endSession and revokeGrant touch only the named user's rows and say
 *   whether there was one; a grant goes with its access tokens; endAll ends
 *   every session and token of the user ("ends one session or grant of
 *   that user only, and everything at once").
 */
export class UserSignInRepository {
  constructor(private readonly db: Db) {}

  async sessions(userId: string, now: number): Promise<SessionRecord[]> {
    const rows = await this.db("sessions").where({ user_id: userId }).where("expires_at", ">", now).orderBy("created_at", "desc");
    return rows.map((r) => {
      const { amr: _amr, factorId: _factor, ...session } = sessionFromRow(r);
      return session;
    });
  }

  /** The live refresh token of each of the user's grants: unconsumed, unrevoked, unexpired. */
  async refreshGrants(userId: string, now: number): Promise<RefreshGrantRecord[]> {
    const rows = await this.db("refresh_tokens as t")
      .leftJoin("applications as a", "a.client_id", "t.client_id")
      .where("t.user_id", userId)
      .whereNull("t.consumed_at")
      .whereNull("t.revoked_at")
      .where("t.expires_at", ">", now)
      .orderBy("t.issued_at", "desc")
      .select("t.family_id", "t.client_id", "t.scope", "t.auth_time", "t.issued_at", "t.expires_at", "a.name as application_name");
    return rows.map((r) => ({
      familyId: r.family_id,
      clientId: r.client_id,
      ...(r.application_name ? { applicationName: r.application_name as string } : {}),
      scope: r.scope,
      authTime: Number(r.auth_time),
      issuedAt: Number(r.issued_at),
      expiresAt: Number(r.expires_at),
    }));
  }

  /** Ends one session of the user, its clients' logouts queued with it; false when it has no such session. */
  async endSession(userId: string, idHash: string, at: number): Promise<boolean> {
    return (await this.db.transaction((trx) => endSessions(trx, (rows) => rows.where({ user_id: userId, id_hash: idHash }), "admin_revoked", at))) > 0;
  }

  /** Revokes one grant of the user, its access tokens with it; false when it has no such grant. */
  async revokeGrant(userId: string, familyId: string, at: number): Promise<boolean> {
    const owned = await this.db("refresh_tokens").where({ user_id: userId, family_id: familyId }).first("family_id");
    if (!owned) return false;
    await revokeFamily(this.db, familyId, at);
    return true;
  }

  /**
   * Ends every session and revokes every refresh and access token of the
   * user, in one transaction; counts the sessions and live grants ended.
   */
  async endAll(userId: string, at: number): Promise<{ sessions: number; grants: number }> {
    return this.db.transaction(async (trx) => {
      const sessions = await trx("sessions").where({ user_id: userId }).where("expires_at", ">", at).count<{ n: number | string }[]>({ n: "*" });
      const grants = await trx("refresh_tokens")
        .where({ user_id: userId })
        .whereNull("consumed_at")
        .whereNull("revoked_at")
        .where("expires_at", ">", at)
        .countDistinct<{ n: number | string }[]>({ n: "family_id" });
      await endUserAccess(trx, userId, at, "admin_revoked");
      return { sessions: Number(sessions[0]?.n ?? 0), grants: Number(grants[0]?.n ?? 0) };
    });
  }
}
