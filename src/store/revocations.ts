import { isPostgres, type Db } from "./db.js";
import { endSessions, type SessionEndReason } from "./backchannelLogouts.js";

/**
 * What ends with a user or an application, written in the same transaction
 * as the change itself. Token lookups also check the user and application
 * rows as they are (tokens.ts), so these writes are not what ends a token at
 * once when its user or application is disabled or deleted; they make the end
 * last: re-enabling a user, or creating an application again under the same
 * client id, brings nothing back. A password change leaves the user row
 * standing: its revocations are what end the tokens.
 */

/**
 * Revoke the user's refresh tokens (by the refresh_tokens.user_id index), end
 * its browser sessions but `keepSession` (the cookie hash of the session a
 * change came from), and drop the codes it signed in for and no client has
 * redeemed yet (a few minutes' worth of rows at most, read whole), which
 * would otherwise mint new refresh tokens from a sign-in that no longer counts.
 * Each session's clients hear of its end (`reason`): their back-channel
 * logouts are queued in the same transaction (backchannelLogouts.ts).
 */
export async function endSignIns(trx: Db, userId: string, at: number, reason: SessionEndReason = "password_changed", keepSession?: string): Promise<void> {
  await revokeRefreshTokens(trx, { user_id: userId }, at);
  await endSessions(trx, (rows) => (keepSession ? rows.where({ user_id: userId }).whereNot({ id_hash: keepSession }) : rows.where({ user_id: userId })), reason, at);
  await trx("authorization_codes").where({ user_id: userId }).whereNull("consumed_at").delete();
}

/**
 * Revoke the live refresh tokens `owner` names; counts them. On PostgreSQL
 * (read committed) an UPDATE that waits for a refresh in flight (which holds
 * the row it consumes) re-checks that row but never sees the new one the
 * refresh wrote, so it runs again, on a fresh snapshot, until one finds
 * nothing. Each row it revoked stays locked until the commit: a refresh of
 * it waits, then finds it revoked.
 */
export async function revokeRefreshTokens(trx: Db, owner: Record<string, string>, at: number): Promise<number> {
  let revoked = 0;
  // Bounded: only refreshes already in flight add rows a pass misses, and each pass takes theirs.
  for (let pass = 0; pass < MAX_REVOCATION_PASSES; pass++) {
    const count = await trx("refresh_tokens").where(owner).whereNull("revoked_at").update({ revoked_at: at });
    revoked += count;
    if (count === 0 || !isPostgres(trx)) break;
  }
  return revoked;
}

const MAX_REVOCATION_PASSES = 10;

/**
 * endSignIns and the user's access tokens too, every one (a kept session
 * keeps no token: none is bound to it): what a password change, a disable
 * and an administrator's "end everything" end. The access tokens come after
 * the refresh tokens, so that this statement sees the access token of any
 * refresh that was in flight (revokeRefreshTokens waited for it); none can
 * start after.
 */
export async function endUserAccess(trx: Db, userId: string, at: number, reason: SessionEndReason, keepSession?: string): Promise<void> {
  await endSignIns(trx, userId, at, reason, keepSession);
  await revokeUserAccessTokens(trx, userId, at);
}

/** Revoke the user's access tokens (of `clientId` only, if given), found by the partial access_tokens.user_id index; counts them. */
export async function revokeUserAccessTokens(trx: Db, userId: string, at: number, clientId?: string): Promise<number> {
  const owner = clientId === undefined ? { user_id: userId } : { user_id: userId, client_id: clientId };
  return trx("access_tokens").where(owner).whereNull("revoked_at").update({ revoked_at: at });
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
