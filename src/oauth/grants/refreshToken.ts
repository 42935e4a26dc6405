import { parseAmr } from "../factors/amr.js";
import type { RefreshTokenRecord } from "../../store/tokens.js";
import { claimsRequestOfNames } from "../claimsRequest.js";
import { OAuthError } from "../errors.js";
import { refreshTokenRotates } from "../fapi2.js";
import { narrowResources, parseResourceValues } from "../resourceIndicators.js";
import { isPublicClient } from "../publicClients.js";
import { narrowScope } from "../scopes.js";
import { loadUserinfoClaims } from "../userinfoClaims.js";
import { sha256 } from "../secrets.js";
import { requireParam } from "./params.js";
import { defineGrant, type GrantDeps, type RequestOrigin } from "./types.js";
import { clientActor } from "../../shared/audit.js";
import type { ApplicationRecord } from "../../shared/model.js";

/**
 * Refresh (RFC 6749 §6) with rotation: every use consumes the refresh token
 * and issues a new one in the same family, in one transaction. Presenting a
 * consumed token again is reuse (RFC 9700 §4.14.2) and revokes the family,
 * unless it happens within the service's grace window. A fapi2 client's
 * refresh token is not rotated (oauth/fapi2.ts): it stays, and the answer
 * carries none.
 */
/** What refresh takes: the tokens, the minter, and what reuse detection reports to. */
type RefreshDeps = Pick<GrantDeps, "store" | "minter" | "clock" | "metrics" | "audit" | "refreshReuseGraceSeconds">;

export const refreshTokenGrant = defineGrant({
  grantType: "refresh_token",
  parameters: ["refreshToken", "scope", "resource"],
  // On for every application, whatever its grantTypes list (spec): the
  // switch for it is refreshExpireInHours > 0, which handle() checks.
  alwaysEnabled: true,
  needsSecret: false,
  // A public client has no secret; rotation and reuse detection are what
  // protect its refresh tokens (RFC 9700 §4.14.2).
  allowsPublicClient: (_params, app) => isPublicClient(app),
  async handle(app, params, deps: RefreshDeps, origin) {
    const presented = requireParam(params.refreshToken, "refresh_token");
    if (app.refreshExpireInHours <= 0) {
      throw new OAuthError("invalid_grant", "refresh tokens are disabled for this application: its refreshExpireInHours is 0");
    }
    const tokenHash = sha256(presented);
    const record = await deps.store.refreshTokens.findByHash(tokenHash);
    // A token issued to another client is as good as unknown to this one (§10.4).
    if (!record || record.clientId !== app.clientId) throw new OAuthError("invalid_grant", "the refresh token is invalid");
    // RFC 9449 §5: a public client's bound refresh token is used only with a proof of the same key.
    if (record.dpopJkt !== undefined && record.dpopJkt !== origin.dpopJkt) {
      throw new OAuthError("invalid_grant", "this refresh token is bound to a DPoP key: the request needs a DPoP proof signed with it");
    }
    await rejectUnusable(record, deps, app, origin);

    const granted = record.scope.split(" ").filter((s) => s.length > 0);
    const scopes = narrowScope(granted, params.scope);
    // RFC 8707 §2.2: a refresh may narrow the resources of its grant, never widen them.
    const resources = narrowResources(record.resources ?? [], parseResourceValues(params.resource));
    const user = record.userId === null ? undefined : await deps.store.users.findById(record.userId);
    if (!user || user.disabled) throw new OAuthError("invalid_grant", "the user of this refresh token is disabled or deleted");
    const rotates = refreshTokenRotates(app);

    const tokens = await deps.minter.mint(
      {
        app,
        user,
        scopes,
        refreshTokenScopes: granted,
        familyId: record.familyId,
        resources,
        refreshTokenResources: record.resources,
        authTime: record.authTime,
        amr: parseAmr(record.amr),
        // Back-Channel Logout 1.0 §2.1: a refreshed ID token names the session its grant came from.
        sid: record.sid,
        // What the grant asked userinfo and the ID token for (OIDC Core §5.5) outlives the refresh.
        claims: { ...loadUserinfoClaims(record.userinfoClaims), ...claimsRequestOfNames("id_token", record.idTokenClaims) },
        idToken: true,
        refreshToken: rotates,
      },
      { tokenHash, rotates },
    );
    if (tokens) return tokens;
    // Consumed or revoked between our read and our rotation: judge it as it is now.
    const current = await deps.store.refreshTokens.findByHash(tokenHash);
    if (current) await rejectUnusable(current, deps, app, origin);
    throw new OAuthError("invalid_grant", "the refresh token is no longer valid");
  },
});

/** Throws invalid_grant for a revoked, consumed or expired token; reuse past the grace window revokes the family. */
async function rejectUnusable(record: RefreshTokenRecord, deps: RefreshDeps, app: ApplicationRecord, origin: RequestOrigin): Promise<void> {
  const now = deps.clock.now();
  if (record.revokedAt !== null) throw new OAuthError("invalid_grant", "the refresh token was revoked");
  if (record.consumedAt !== null) {
    deps.metrics.refreshReuse();
    const withinGrace = now - record.consumedAt < deps.refreshReuseGraceSeconds * 1000;
    deps.audit.record({
      event: "refresh_reuse",
      outcome: "failure",
      actor: clientActor(app),
      clientId: app.clientId,
      clientAddress: origin.clientAddress,
      userId: record.userId,
      details: { familyRevoked: !withinGrace },
    });
    if (withinGrace) throw new OAuthError("invalid_grant", "the refresh token was already used");
    await deps.store.refreshTokens.revokeFamily(record.familyId, now);
    deps.metrics.familyRevoked();
    throw new OAuthError("invalid_grant", "the refresh token was already used; every token of its grant is now revoked");
  }
  if (record.expiresAt <= now) throw new OAuthError("invalid_grant", "the refresh token has expired");
}
