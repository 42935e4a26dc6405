import { parseScope } from "../scopes.js";
import { defineGrant, type GrantDeps } from "./types.js";

/** Client Credentials (RFC 6749 §4.4): the token stands for the application. */
export const clientCredentialsGrant = defineGrant({
  grantType: "client_credentials",
  parameters: ["scope"],
  alwaysEnabled: false,
  needsSecret: true,
  async handle(app, params, deps: Pick<GrantDeps, "minter">) {
    // §4.4.3: no refresh token; there is no user, so no ID token either.
    return deps.minter.mint({ app, scopes: parseScope(params.scope), idToken: false, refreshToken: false });
  },
});
