import { requestedClaimNames, type ClaimsRequest } from "./claimsRequest.js";

/**
 * The `userinfo` member of a `claims` request (OIDC Core §5.5) travels with
 * the grant: the code keeps the whole request (codes.ts); the access tokens
 * minted from it carry the claim names asked for userinfo in this private
 * claim of their payload, and the refresh token keeps them in its row
 * (refresh_tokens.userinfo_claims), so a refreshed access token carries them
 * too. Userinfo reads them back from the token it is shown: that token was
 * found by the hash of its whole value, so its payload is the one signed.
 * Nothing is stored per JWT access token; an opaque one (accessTokenStrategy)
 * keeps them in access_tokens.userinfo_claims. A grant without the
 * parameter carries nothing.
 */
export const USERINFO_CLAIMS_CLAIM = "userinfo_claims";

/** The claim names asked for at userinfo; empty when none. */
export function userinfoClaimNames(request: ClaimsRequest | undefined): string[] {
  return requestedClaimNames(request, "userinfo");
}

/** A claims request asking userinfo for `names` (each as `null`: §5.5.1's "default manner"). */
function userinfoRequestOf(names: unknown): ClaimsRequest | undefined {
  if (!Array.isArray(names) || names.length === 0) return undefined;
  const asked = names.filter((n): n is string => typeof n === "string");
  return { userinfo: Object.fromEntries(asked.map((name) => [name, null])) };
}

/** As a refresh token row keeps them; undefined for none. */
export function storedUserinfoClaims(request: ClaimsRequest | undefined): string | undefined {
  const names = userinfoClaimNames(request);
  return names.length > 0 ? JSON.stringify(names) : undefined;
}

/** Back from a refresh token row (written by storedUserinfoClaims). */
export function loadUserinfoClaims(stored: string | undefined): ClaimsRequest | undefined {
  return stored ? userinfoRequestOf(JSON.parse(stored)) : undefined;
}

/** What an access token's payload (decoded once, accessTokens.ts) asks of userinfo. */
export function userinfoClaimsOfPayload(payload: Readonly<Record<string, unknown>> | undefined): ClaimsRequest | undefined {
  return payload ? userinfoRequestOf(payload[USERINFO_CLAIMS_CLAIM]) : undefined;
}
