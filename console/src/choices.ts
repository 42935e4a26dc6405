/**
 * The values the service accepts for the console's choice fields. The
 * console is a browser bundle and imports no server code, so they are listed
 * here; test/e2e/console.spec.ts holds them against the service's own lists.
 */
export const PROVIDER_TYPES = ["Custom", "GitHub", "Google", "OIDC"] as const;
export const PROVIDER_TOKEN_AUTH_METHODS = ["client_secret_basic", "client_secret_post"] as const;
export const GRANT_TYPES = ["authorization_code", "implicit", "password", "client_credentials", "refresh_token", "urn:ietf:params:oauth:grant-type:device_code",
  "urn:ietf:params:oauth:grant-type:token-exchange", "urn:ietf:params:oauth:grant-type:jwt-bearer"] as const;
export const TOKEN_FORMATS = ["JWT-Standard", "JWT"] as const;
export const SIGNING_ALGS = ["RS256", "PS256", "ES256", "EdDSA"] as const;
export const ACCESS_TOKEN_STRATEGIES = ["jwt", "opaque"] as const;
