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
  async handle(app, params, deps: Pick<GrantDeps, "users" | "minter" | "clock">, origin) {
    const username = requireParam(params.username, "username");
    const password = requireParam(params.password, "password");
    const scopes = parseScope(params.scope);
    const user = await deps.users.authenticate(username, password, origin.clientAddress, app.clientId);
    return deps.minter.mint({
      app,
      user,
      scopes,
      authTime: epochSeconds(deps.clock),
      idToken: true,
      refreshToken: true,
    });
  },
});
