import type { Clock } from "../shared/clock.js";
import type { Store } from "../store/index.js";
import { accessTokenClaimsOf, requireUserToken } from "./accessTokens.js";
import { requestedClaims } from "./claimsRequest.js";
import type { DPoPProofs, PresentedToken } from "./dpop.js";
import { claimsForScopes } from "./scopes.js";
import { authenticationOf } from "./introspection.js";
import { loadUserinfoClaims, userinfoClaimsOfPayload } from "./userinfoClaims.js";

function authenticationClaimsOf(payload: object): Record<string, unknown> {
  const { authTime, acr, amr } = authenticationOf(payload as Record<string, unknown>);
  return { ...(authTime !== undefined ? { auth_time: authTime } : {}), ...(acr ? { acr } : {}), ...(amr ? { amr } : {}) };
}

/** OIDC UserInfo claims; `aud` is a single string, as the spec's table says. */
export interface UserInfo extends Record<string, unknown> {
  sub: string;
  iss: string;
  aud: string;
}

/**
 * OpenID Connect Core §5.3: sub, iss and aud, then what the token's scopes
 * release about the user as they are now, through the one scope mapping,
 * and the standard claims its grant's `claims` request asked userinfo for
 * (§5.5), whatever the scope.
 */
export async function userInfo(store: Store, clock: Clock, issuer: string, presented: PresentedToken | undefined, dpop: Pick<DPoPProofs, "verify">): Promise<UserInfo> {
  const { record, user, hash } = await requireUserToken(store, clock, presented, dpop);
  const claims = accessTokenClaimsOf(record, hash, presented!.token!);
  // Not `{ ...claims, sub, ... }`: on Node 20's V8, an object made by a
  // spread and then given keys the source lacks survives every
  // young-generation collection until the next full one.
  return Object.assign(
    { sub: user.id, iss: issuer, aud: record.clientId },
    claimsForScopes(user, record.scope.split(" ")),
    // A JWT carries them in its payload, an opaque token's row keeps them.
    requestedClaims(user, userinfoClaimsOfPayload(claims) ?? loadUserinfoClaims(record.userinfoClaims), "userinfo"),
    // How the user signed in, as the token's minting recorded it, in a JWT's payload or an opaque token's row (RFC 9068 §2.2.1; issue #46 §4).
    authenticationClaimsOf(claims),
  );
}
