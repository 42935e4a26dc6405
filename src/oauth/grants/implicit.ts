import type { GrantFacts } from "./types.js";

/**
 * Implicit (RFC 6749 §4.2): no token-endpoint handler. An application that
 * lists it may ask the authorize endpoint for the token and id_token
 * response types (authorizeRequest.ts).
 */
export const implicitGrant: GrantFacts = {
  grantType: "implicit",
  alwaysEnabled: false,
  needsSecret: false,
};
