import { authorizationCodeGrant } from "./authorizationCode.js";
import { clientCredentialsGrant } from "./clientCredentials.js";
import { deviceCodeGrant } from "./deviceCode.js";
import { tokenExchangeGrant } from "./tokenExchange.js";
import { jwtBearerGrant } from "./jwtBearer.js";
import { implicitGrant } from "./implicit.js";
import { passwordGrant } from "./password.js";
import { refreshTokenGrant } from "./refreshToken.js";
import type { GrantFacts, GrantHandler } from "./types.js";

/**
 * Every grant an application may list, in the order lists show them. The one
 * table: validation, discovery, the demo seed, the CLI's help and the
 * console's choices all derive their lists from it.
 */
export const GRANT_TABLE: readonly GrantFacts[] = [authorizationCodeGrant, implicitGrant, passwordGrant, clientCredentialsGrant, refreshTokenGrant, deviceCodeGrant, tokenExchangeGrant, jwtBearerGrant];

/** The token endpoint's grants, by grant_type. */
export const GRANTS: ReadonlyMap<string, GrantHandler> = new Map(
  [authorizationCodeGrant, passwordGrant, clientCredentialsGrant, refreshTokenGrant, deviceCodeGrant, tokenExchangeGrant, jwtBearerGrant].map((g) => [g.grantType, g]),
);

/** Every grant_type value an application may list. */
export const GRANT_TYPES: readonly string[] = GRANT_TABLE.map((g) => g.grantType);

const BY_NAME: ReadonlyMap<string, GrantFacts> = new Map(
  GRANT_TABLE.flatMap((g) => (g.shortName ? [[g.grantType, g], [g.shortName, g]] : [[g.grantType, g]]) as [string, GrantFacts][]),
);

/** The grant_type an application's list means by `name` (its grant_type or short name); undefined when none. */
export const grantTypeNamed = (name: string): string | undefined => BY_NAME.get(name)?.grantType;

/** Whether an application may use a grant: listed in its grantTypes, or one the table says is always on. */
export function grantEnabled(grantTypes: readonly string[], grantType: string): boolean {
  return BY_NAME.get(grantType)?.alwaysEnabled === true || grantTypes.includes(grantType);
}

/** The grants a public client can never use: they take the client's secret. */
export const SECRET_GRANT_TYPES: readonly string[] = GRANT_TABLE.filter((g) => g.needsSecret).map((g) => g.grantType);
