import type { Clock } from "../shared/clock.js";
import type { Store } from "../store/index.js";
import { findActiveAccessToken } from "./accessTokens.js";

/** RFC 7662 §2.2 response; only `active` is set for an inactive token. */
export interface Introspection {
  active: boolean;
  clientId?: string;
  username?: string;
  tokenType?: string;
  exp?: number;
  iat?: number;
  nbf?: number;
  sub?: string;
  aud?: string[];
  iss?: string;
  scope?: string;
  jti?: string;
}

/**
 * `issuer` is the iss of an opaque token, which has no payload to carry it;
 * its username is the user's name as the token's own read found it.
 */
export async function introspectToken(store: Store, clock: Clock, token: string, issuer?: string): Promise<Introspection> {
  const found = await findActiveAccessToken(store, clock, token);
  if (!found) return { active: false };
  const { record, claims } = found;
  const username = found.opaque ? found.username : claims.preferred_username;
  return {
    active: true,
    clientId: record.clientId,
    username: username ?? "",
    tokenType: "Bearer",
    exp: claims.exp,
    iat: claims.iat,
    nbf: claims.nbf,
    sub: claims.sub,
    aud: claims.aud === undefined ? [] : ([] as string[]).concat(claims.aud),
    iss: found.opaque ? issuer : claims.iss,
    scope: record.scope,
    jti: record.jti,
  };
}
