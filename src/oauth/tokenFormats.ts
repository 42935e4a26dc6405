import type { TokenFormat, UserRecord } from "../shared/model.js";

/**
 * Casdoor's `owner` of a user: its organization. This service has one set of
 * users and no organizations, so every user belongs to Casdoor's default.
 */
export const CASDOOR_ORGANIZATION = "built-in";
/** Every claim casdoorUserClaims may write, for discovery. */
export const CASDOOR_CLAIMS = ["owner", "name", "displayName", "email", "avatar", "id", "type"] as const;

/** Casdoor's `type` of an ordinary user. */
export const CASDOOR_USER_TYPE = "normal-user";

/**
 * The claims of an application's `JWT` token format (Casdoor's names), in
 * the access token and the ID token beside sub, iss, aud, exp and iat, for
 * clients that read Casdoor's user object out of the token (Casdoor's SDKs'
 * parseJwtToken). None is empty: displayName falls back to the user name;
 * email and avatar, which have no honest fallback, are left out when the
 * user has none. Every one is the user's whatever the scope, as in Casdoor:
 * choosing this format is the application's consent to it.
 */
export function casdoorUserClaims(user: UserRecord): Record<string, string> {
  const claims: Record<string, string> = {
    owner: CASDOOR_ORGANIZATION,
    name: user.name,
    displayName: user.displayName || user.name,
    id: user.id,
    type: CASDOOR_USER_TYPE,
  };
  if (user.email) claims.email = user.email;
  if (user.avatar) claims.avatar = user.avatar;
  return claims;
}

export const usesCasdoorClaims = (format: TokenFormat): boolean => format === "JWT";
