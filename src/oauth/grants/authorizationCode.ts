import { parseAmr } from "../factors/amr.js";
import { loadClaimsRequest } from "../claimsRequest.js";
import { OAuthError } from "../errors.js";
import { narrowResources, parseResourceValues } from "../resourceIndicators.js";
import { requireParam } from "./params.js";
import { defineGrant, type GrantDeps } from "./types.js";

/** Authorization Code (RFC 6749 §4.1.3), with PKCE (RFC 7636). */
export const authorizationCodeGrant = defineGrant({
  grantType: "authorization_code",
  parameters: ["code", "redirectUri", "codeVerifier", "resource"],
  // On for every application, whatever its grantTypes list (spec).
  alwaysEnabled: true,
  needsSecret: false,
  // The spec lets a PKCE client leave client_secret out; the code must then
  // carry a challenge, which redeem() enforces.
  allowsPublicClient: (params) => params.codeVerifier !== "",
  async handle(app, params, deps: Pick<GrantDeps, "codes" | "store" | "minter">, origin) {
    const code = await deps.codes.redeem(app, {
      code: requireParam(params.code, "code"),
      redirectUri: params.redirectUri,
      codeVerifier: params.codeVerifier,
      dpopJkt: origin.dpopJkt,
    });
    // RFC 8707 §2.2: the token may name fewer of the resources the authorize request named, never others.
    const resources = narrowResources(code.resources ?? [], parseResourceValues(params.resource));
    const user = await deps.store.users.findById(code.userId);
    if (!user || user.disabled) throw new OAuthError("invalid_grant", "the user of this authorization code is no longer active");
    const tokens = await deps.minter.mint({
      app,
      user,
      scopes: code.scope.split(" "),
      familyId: code.familyId,
      resources,
      refreshTokenResources: code.resources,
      authTime: code.authTime,
      amr: parseAmr(code.amr),
      sid: code.sid,
      nonce: code.nonce ?? undefined,
      claims: loadClaimsRequest(code.claims),
      idToken: true,
      refreshToken: true,
    });
    await deps.codes.revokeIfReplayed(code);
    return tokens;
  },
});
