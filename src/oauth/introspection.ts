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

export async function introspectToken(store: Store, clock: Clock, token: string): Promise<Introspection> {
  const found = await findActiveAccessToken(store, clock, token);
  if (!found) return { active: false };
  const { record, claims } = found;
  return {
    active: true,
    clientId: record.clientId,
    username: claims.preferred_username ?? "",
    tokenType: "Bearer",
    exp: claims.exp,
    iat: claims.iat,
    nbf: claims.nbf,
    sub: claims.sub,
    aud: claims.aud === undefined ? [] : ([] as string[]).concat(claims.aud),
    iss: claims.iss,
    scope: record.scope,
    jti: record.jti,
  };
}
