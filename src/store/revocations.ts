import type { Db } from "./db.js";
import { endSessions, type SessionEndReason } from "./backchannelLogouts.js";

/**
 * What ends with a user or an application, written in the same transaction
 * as the change itself. Token lookups also check the user and application
 * rows as they are (tokens.ts), so these writes are not what ends a token at
 * once; they make the end last: re-enabling a user, or creating an
 * application again under the same client id, brings nothing back.
 */

/**
 * Revoke the user's refresh tokens (by the refresh_tokens.user_id index), end
 * its browser sessions, and drop the codes it signed in for and no client has
 * redeemed yet (a few minutes' worth of rows at most, read whole), which
 * would otherwise mint new refresh tokens from a sign-in that no longer counts.
 * Each session's clients hear of its end (`reason`): their back-channel
 * logouts are queued in the same transaction (backchannelLogouts.ts).
 */
export async function endSignIns(trx: Db, userId: string, at: number, reason: SessionEndReason = "password_changed"): Promise<void> {
  await trx("refresh_tokens").where({ user_id: userId }).whereNull("revoked_at").update({ revoked_at: at });
  await endSessions(trx, (rows) => rows.where({ user_id: userId }), reason, at);
  await trx("authorization_codes").where({ user_id: userId }).whereNull("consumed_at").delete();
}

/**
 * Revoke the user's access tokens. Access tokens have no index by user (one
 * would cost every token issued a write), so this reads the whole table:
 * fine for the rare change that needs it (disabling a user).
 */
export async function revokeUserAccessTokens(trx: Db, userId: string, at: number): Promise<void> {
  await trx("access_tokens").where({ user_id: userId }).whereNull("revoked_at").update({ revoked_at: at });
}

/**
 * Revoke the refresh tokens issued to a client that turns public: they were
 * issued to a client that proved itself with a secret at each refresh, and
 * would now refresh with its client_id alone. Reads the table whole (the
 * rare change that needs it).
 */
export async function revokeClientRefreshTokens(trx: Db, clientId: string, at: number): Promise<void> {
  await trx("refresh_tokens").where({ client_id: clientId }).whereNull("revoked_at").update({ revoked_at: at });
}

/** Revoke every token issued to a client (its application is deleted); reads both token tables whole. */
export async function revokeClientTokens(trx: Db, clientId: string, at: number): Promise<void> {
  await trx("access_tokens").where({ client_id: clientId }).whereNull("revoked_at").update({ revoked_at: at });
  await revokeClientRefreshTokens(trx, clientId, at);
}
