import { parseScope } from "../scopes.js";
import { scopesOfResources } from "../resourceIndicators.js";
import { defineGrant, type GrantDeps } from "./types.js";

/** Client Credentials (RFC 6749 §4.4): the token stands for the application. */
export const clientCredentialsGrant = defineGrant({
  grantType: "client_credentials",
  parameters: ["scope", "resource"],
  alwaysEnabled: false,
  needsSecret: true,
  async handle(app, params, deps: Pick<GrantDeps, "minter" | "resources">) {
    // RFC 8707 §2: any registered resource; there is no user whose grant could bound it.
    const resources = await deps.resources.fromParam(params.resource);
    const scopes = parseScope(params.scope, scopesOfResources(resources));
    // §4.4.3: no refresh token; there is no user, so no ID token either.
    return deps.minter.mint({ app, scopes, resources: resources.map((r) => r.uri), idToken: false, refreshToken: false });
  },
});
