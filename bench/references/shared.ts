/** What the driver and the node-oidc-provider process agree on. */
export const OIDC_CLIENT = { id: "bench-client", secret: "bench-secret-0123456789abcdef" };
/** The resource indicator whose tokens are RS256 JWTs. */
export const OIDC_RESOURCE = "urn:bench:api";
