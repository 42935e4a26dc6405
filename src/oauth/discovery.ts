import { GRANTS } from "./grants/index.js";
import { SIGNING_ALG } from "./keys.js";
import { SCOPE_CLAIMS, SUPPORTED_SCOPES } from "./scopes.js";

/**
 * OpenID Provider / RFC 8414 metadata. It lists only what this server really
 * serves, so strict clients configured from it do not fail later.
 */
export function discoveryDocument(issuer: string) {
  return {
    issuer,
    tokenEndpoint: `${issuer}/api/login/oauth/access_token`,
    introspectionEndpoint: `${issuer}/api/login/oauth/introspect`,
    userinfoEndpoint: `${issuer}/api/userinfo`,
    revocationEndpoint: `${issuer}/api/login/oauth/revoke`,
    endSessionEndpoint: `${issuer}/api/logout`,
    jwksUri: `${issuer}/.well-known/jwks`,
    responseTypesSupported: ["code"],
    grantTypesSupported: [...GRANTS.keys()],
    subjectTypesSupported: ["public"],
    idTokenSigningAlgValuesSupported: [SIGNING_ALG],
    scopesSupported: [...SUPPORTED_SCOPES],
    claimsSupported: ["sub", "iss", "aud", "exp", "iat", "auth_time", "nonce", "azp", ...SCOPE_CLAIMS],
    tokenEndpointAuthMethodsSupported: ["client_secret_basic", "client_secret_post"],
    introspectionEndpointAuthMethodsSupported: ["client_secret_basic", "client_secret_post"],
    revocationEndpointAuthMethodsSupported: ["client_secret_basic", "client_secret_post"],
    codeChallengeMethodsSupported: ["S256"],
  };
}
