import { clientActor, type AuditTrail } from "../shared/audit.js";
import type { Clock } from "../shared/clock.js";
import type { ApplicationRecord } from "../shared/model.js";
import type { Store } from "../store/index.js";
import { OAuthError } from "./errors.js";
import { sha256 } from "./secrets.js";

/**
 * RFC 7009 §2.1: revoke `token` if it was issued to `clientId`. Unknown
 * tokens and other clients' tokens are silently left alone, so the answer
 * never tells whether a token exists. Revoking a refresh token revokes its
 * whole family; an access token is revoked alone. The hint is not needed:
 * both kinds are found by the hash of their value. A revocation that
 * found the client's token is a `token_revoked` event on `audit`.
 */
export async function revokeToken(
  store: Store,
  clock: Clock,
  clientId: string,
  token: string,
  /** Where the revocation is recorded, the application revoking, and where it called from. */
  audit: { trail: AuditTrail; app: Pick<ApplicationRecord, "id" | "clientId">; clientAddress?: string },
): Promise<void> {
  if (!token) throw new OAuthError("invalid_request", "missing parameter: token");
  const tokenHash = sha256(token);
  const now = clock.now();
  const revoked = (kind: "refresh_token" | "access_token", userId: string | null) =>
    audit.trail.record({
      event: "token_revoked",
      outcome: "success",
      actor: clientActor(audit.app),
      clientId,
      clientAddress: audit.clientAddress,
      userId,
      details: { tokenType: kind },
    });
  const refresh = await store.refreshTokens.findByHash(tokenHash);
  if (refresh) {
    if (refresh.clientId === clientId) {
      await store.refreshTokens.revokeFamily(refresh.familyId, now);
      revoked("refresh_token", refresh.userId);
    }
    return;
  }
  const access = await store.accessTokens.findByHash(tokenHash);
  if (access?.clientId === clientId) {
    await store.accessTokens.revoke(tokenHash, now);
    revoked("access_token", access.userId);
  }
}
