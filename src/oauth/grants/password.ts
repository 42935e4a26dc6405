import { OAuthError } from "../errors.js";
import { epochSeconds } from "../../shared/clock.js";
import { parseScope } from "../scopes.js";
import { defineGrant, type GrantDeps } from "./types.js";
import { requireParam } from "./params.js";

/** Resource Owner Password Credentials (RFC 6749 §4.3). */
export const passwordGrant = defineGrant({
  grantType: "password",
  parameters: ["username", "password", "scope"],
  alwaysEnabled: false,
  needsSecret: true,
  async handle(app, params, deps: Pick<GrantDeps, "users" | "minter" | "clock" | "store">, origin) {
    const username = requireParam(params.username, "username");
    const password = requireParam(params.password, "password");
    const scopes = parseScope(params.scope);
    const user = await deps.users.authenticate(username, password, origin.clientAddress, app.clientId);
    // This grant has no step for a second factor (issue #46 §4): after the password, so it tells nothing to a guesser.
    if (app.mfa === "required" || (await deps.store.userFactors.list(user.id)).length > 0) {
      throw new OAuthError("invalid_grant", "a second factor is required for this user: sign in through the browser");
    }
    return deps.minter.mint({
      app,
      user,
      scopes,
      authTime: epochSeconds(deps.clock),
      amr: ["pwd"],
      idToken: true,
      refreshToken: true,
    });
  },
});
