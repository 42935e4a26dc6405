/**
 * The values the service accepts for the console's choice fields that no
 * RPC lists yet. The console is a browser bundle and imports no server code,
 * so they are listed here; test/e2e/consoleAdmin.spec.ts holds them against
 * the service's own lists. An application's choices (grant types, formats,
 * algorithms, client authentication) come from ApplicationChoicesService.
 */
export const PROVIDER_TYPES = ["Custom", "GitHub", "Google", "OIDC"] as const;
export const PROVIDER_TOKEN_AUTH_METHODS = ["client_secret_basic", "client_secret_post"] as const;
export const SIGNING_ALGS = ["RS256", "PS256", "ES256", "EdDSA"] as const;
