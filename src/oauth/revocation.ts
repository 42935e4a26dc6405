import type { Clock } from "../shared/clock.js";
import type { Store } from "../store/index.js";
import { revokeFamily } from "../store/tokens.js";
import { OAuthError } from "./errors.js";
import { sha256 } from "./secrets.js";

/**
 * RFC 7009 §2.1: revoke `token` if it was issued to `clientId`. Unknown
 * tokens and other clients' tokens are silently left alone, so the answer
 * never tells whether a token exists. Revoking a refresh token revokes its
 * whole family; an access token is revoked alone. The hint is not needed:
 * both kinds are found by the hash of their value.
 */
export async function revokeToken(store: Store, clock: Clock, clientId: string, token: string): Promise<void> {
  if (!token) throw new OAuthError("invalid_request", "missing parameter: token");
  const tokenHash = sha256(token);
  const now = clock.now();
  const refresh = await store.refreshTokens.findByHash(tokenHash);
  if (refresh) {
    if (refresh.clientId === clientId) await revokeFamily(store.db, refresh.familyId, now);
    return;
  }
  const access = await store.accessTokens.findByHash(tokenHash);
  if (access?.clientId === clientId) await store.accessTokens.revoke(tokenHash, now);
}
