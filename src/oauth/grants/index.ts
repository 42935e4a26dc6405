import { authorizationCodeGrant } from "./authorizationCode.js";
import { clientCredentialsGrant } from "./clientCredentials.js";
import { passwordGrant } from "./password.js";
import { refreshTokenGrant } from "./refreshToken.js";
import type { GrantHandler } from "./types.js";

/** Every grant the token endpoint knows, by grant_type. */
export const GRANTS: ReadonlyMap<string, GrantHandler> = new Map(
  [authorizationCodeGrant, passwordGrant, clientCredentialsGrant, refreshTokenGrant].map((g) => [g.grantType, g]),
);
