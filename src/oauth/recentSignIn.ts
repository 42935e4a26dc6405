import { DPOP_CHALLENGE, type PresentedToken } from "./dpop.js";
import { OAuthError } from "./errors.js";

/**
 * How recent a sign-in the account API takes for a change that strips a
 * second factor or a way to sign in (AccountService.RemoveFactor,
 * UnlinkProvider): a stolen access token alone must not do it.
 */
export const RECENT_SIGN_IN_SECONDS = 300;

/**
 * RFC 9470 §3: unless the user signed in (`auth_time`) within `maxAge`
 * seconds, refuse with `insufficient_user_authentication` and `max_age`, so
 * the client signs the user in again with that max_age (OIDC Core §3.1.2.1)
 * and calls with the new token. A token that does not say when the user
 * signed in (an opaque one minted before its row kept it) is refused too:
 * nothing here can tell. The challenge is in the token's own scheme
 * (RFC 9449 §7.1 for a DPoP one).
 */
export function requireRecentSignIn(authTime: number | undefined, nowMs: number, scheme: PresentedToken["scheme"], maxAge = RECENT_SIGN_IN_SECONDS): void {
  if (authTime !== undefined && Math.floor(nowMs / 1000) - authTime <= maxAge) return;
  const answer = scheme === "DPoP" ? { ...DPOP_CHALLENGE, maxAge } : { maxAge };
  const why = authTime === undefined ? "this access token does not say when you signed in" : "your sign-in is too old for this change";
  throw new OAuthError("insufficient_user_authentication", `${why}: sign in again (max_age=${maxAge}) and call with the new token`, 401, answer);
}
