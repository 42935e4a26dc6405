import type { Db } from "./db.js";
import { revokeRefreshTokens, revokeUserAccessTokens } from "./revocations.js";

/** What a user allowed one application: scope names and resource URIs. */
export interface ConsentRecord {
  userId: string;
  clientId: string;
  scopes: string[];
  resources: string[];
  grantedAt: number;
}

interface Row {
  user_id: string;
  client_id: string;
  scopes: string;
  resources: string;
  granted_at: number | string;
}

const words = (text: string) => text.split(" ").filter((w) => w !== "");

/** What revoking a consent ended. */
export interface RevokedConsent {
  /** The refresh tokens of that application for that user, revoked with it. */
  refreshTokens: number;
}

const recordOf = (row: Row): ConsentRecord => ({
  userId: row.user_id,
  clientId: row.client_id,
  scopes: words(row.scopes),
  resources: words(row.resources),
  grantedAt: Number(row.granted_at),
});

/**
 * Remembered consents, one per user and application. The contract
 * (test/store/contract/applications.spec.ts, every backend, "consents"):
 * - remember() writes the whole grant in one statement, replacing what was
 *   there (the domain passes the union);
 * - listForUser() gives a user's consents, newest first;
 * - revoke() deletes the consent and, in the same transaction and only when
 *   it deleted one, revokes that application's refresh and access tokens for
 *   that user (access tokens with no refresh token behind them included):
 *   of parallel revocations of one consent exactly one reports it;
 * - a consent goes with its user or its application.
 */
export class ConsentRepository {
  constructor(private readonly db: Db) {}

  async find(userId: string, clientId: string): Promise<ConsentRecord | undefined> {
    const row = await this.db<Row>("consents").where({ user_id: userId, client_id: clientId }).first();
    return row && recordOf(row);
  }

  /** The user's consents, newest first (by the primary key's user_id prefix). */
  async listForUser(userId: string): Promise<ConsentRecord[]> {
    const rows = await this.db<Row>("consents").where({ user_id: userId }).orderBy([{ column: "granted_at", order: "desc" }, { column: "client_id" }]);
    return rows.map(recordOf);
  }

  /**
   * Forget what the user allowed the application and end what it holds for
   * the user; undefined when there was no such consent (nothing is revoked).
   */
  async revoke(userId: string, clientId: string, at: number): Promise<RevokedConsent | undefined> {
    return this.db.transaction(async (trx) => {
      const deleted = await trx("consents").where({ user_id: userId, client_id: clientId }).delete();
      if (deleted === 0) return undefined;
      const refreshTokens = await revokeRefreshTokens(trx, { user_id: userId, client_id: clientId }, at);
      // After the refresh tokens, as in endUserAccess (revocations.ts), for a refresh in flight.
      await revokeUserAccessTokens(trx, userId, at, clientId);
      return { refreshTokens };
    });
  }

  async remember(consent: ConsentRecord): Promise<void> {
    const row = { user_id: consent.userId, client_id: consent.clientId, scopes: consent.scopes.join(" "), resources: consent.resources.join(" "), granted_at: consent.grantedAt };
    await this.db("consents").insert(row).onConflict(["user_id", "client_id"]).merge(["scopes", "resources", "granted_at"]);
  }
}
