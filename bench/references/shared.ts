/** What the driver and the node-oidc-provider process agree on. */
export const OIDC_CLIENT = { id: "bench-client", secret: "bench-secret-0123456789abcdef" };
/** The resource indicator whose access tokens are JWTs signed with `alg`; without one, tokens are opaque. */
export const oidcResource = (alg: string) => `urn:bench:${alg}`;
export const OIDC_ALGS = ["RS256", "ES256", "EdDSA"] as const;
