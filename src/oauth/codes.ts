import { randomUUID } from "node:crypto";
import type { Clock } from "../shared/clock.js";
import type { AuthorizationCodeRecord } from "../store/authorizationCodes.js";
import type { Store } from "../store/index.js";
import { storedClaimsRequest, type ClaimsRequest } from "./claimsRequest.js";
import { OAuthError } from "./errors.js";
import { codeLifetimeSeconds } from "./fapi2.js";
import type { Metrics } from "./metrics.js";
import { verifyPkce } from "./pkce.js";
import { randomToken, sha256 } from "./secrets.js";
import type { ApplicationRecord } from "../shared/model.js";

/** What a code is bound to when it is issued. */
export interface CodeGrant {
  clientId: string;
  userId: string;
  redirectUri: string;
  scopes: readonly string[];
  nonce?: string;
  codeChallenge?: string;
  codeChallengeMethod?: string;
  /** Epoch seconds of the user's authentication. */
  authTime: number;
  /** The authorize request's `claims` (OIDC Core §5.5). */
  claims?: ClaimsRequest;
  /** What the sign-in proved (RFC 8176). */
  amr?: readonly string[];
  /** RFC 8707: the resources the authorize request named. */
  resources?: readonly string[];
  /** RFC 9449 §10: the authorize request's dpop_jkt, the key whose proof must redeem the code. */
  dpopJkt?: string;
  /** The browser session it is issued from (Back-Channel Logout 1.0 §2.1 `sid`). */
  sid?: string;
}

/** What the token request presents with a code. */
export interface CodeRedemption {
  code: string;
  /** Optional, as the spec's token request omits it; when sent it must match. */
  redirectUri: string;
  codeVerifier: string;
  /** The thumbprint of the key of the token request's DPoP proof, when it sent one. */
  dpopJkt?: string;
}

export const MAX_CODE_TTL_SECONDS = 600;

/**
 * Authorization codes (RFC 6749 §4.1.2): 256 random bits, stored only as a
 * SHA-256, bound to client, redirect_uri, scope, nonce and PKCE challenge,
 * and redeemed exactly once.
 */
export class AuthorizationCodes {
  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly metrics: Metrics,
    readonly ttlSeconds = 300,
  ) {
    if (ttlSeconds <= 0 || ttlSeconds > MAX_CODE_TTL_SECONDS) {
      throw new Error(`authorization code lifetime must be 1-${MAX_CODE_TTL_SECONDS} seconds`);
    }
  }

  /** A code for `grant`, issued to `app`, whose profile may shorten its lifetime (oauth/fapi2.ts). */
  async issue(grant: CodeGrant, app: Pick<ApplicationRecord, "profile"> = {}): Promise<string> {
    const code = randomToken();
    const now = this.clock.now();
    await this.store.authorizationCodes.insert({
      codeHash: sha256(code),
      familyId: randomUUID(),
      clientId: grant.clientId,
      userId: grant.userId,
      redirectUri: grant.redirectUri,
      scope: grant.scopes.join(" "),
      nonce: grant.nonce ?? null,
      codeChallenge: grant.codeChallenge ?? null,
      codeChallengeMethod: grant.codeChallengeMethod ?? null,
      authTime: grant.authTime,
      claims: storedClaimsRequest(grant.claims),
      ...(grant.amr?.length ? { amr: grant.amr.join(" ") } : {}),
      ...(grant.resources?.length ? { resources: [...grant.resources] } : {}),
      ...(grant.dpopJkt ? { dpopJkt: grant.dpopJkt } : {}),
      ...(grant.sid ? { sid: grant.sid } : {}),
      createdAt: now,
      expiresAt: now + codeLifetimeSeconds(app, this.ttlSeconds) * 1000,
      consumedAt: null,
      replayedAt: null,
    });
    return code;
  }

  /**
   * Check the code against the request and mark it used. Checks come first,
   * so a stolen code presented without its verifier is not burnt; the mark
   * is one conditional UPDATE, so exactly one of any concurrent callers wins.
   * A used code presented again revokes every token minted from it, but only
   * when its own client presents it: `app` was authenticated by the token
   * endpoint (secret, or for a public client nothing), and the PKCE check
   * below is a public client's proof. Anyone else gets `invalid_grant` and
   * changes nothing, so a leaked used code cannot be replayed to revoke the
   * real client's tokens.
   */
  async redeem(app: ApplicationRecord, presented: CodeRedemption): Promise<AuthorizationCodeRecord> {
    const record = await this.store.authorizationCodes.findByHash(sha256(presented.code));
    if (!record) throw new OAuthError("invalid_grant", "authorization code is invalid");
    if (record.clientId !== app.clientId) throw new OAuthError("invalid_grant", "authorization code was issued to another client");
    verifyPkce(record.codeChallenge, presented.codeVerifier);
    // RFC 9449 §10: a code bound by dpop_jkt is redeemed only with a proof of that key; like PKCE, checked before the code is burnt.
    if (record.dpopJkt !== undefined && record.dpopJkt !== presented.dpopJkt) {
      throw new OAuthError("invalid_grant", "this authorization code is bound to a DPoP key (dpop_jkt): the token request needs a DPoP proof signed with it");
    }
    if (record.consumedAt !== null) await this.replayed(record);
    if (record.expiresAt <= this.clock.now()) throw new OAuthError("invalid_grant", "authorization code has expired");
    if (presented.redirectUri && presented.redirectUri !== record.redirectUri) {
      throw new OAuthError("invalid_grant", "redirect_uri differs from the one of the authorization request");
    }
    if (!(await this.store.authorizationCodes.consume(record.codeHash, this.clock.now()))) await this.replayed(record);
    return record;
  }

  /**
   * Called by the winner after minting. A replay that raced the redemption
   * may have revoked the family before the tokens existed; the replay marks
   * the code before revoking and the winner mints before reading the mark,
   * so one of the two always sees the other and the tokens end up revoked.
   */
  async revokeIfReplayed(record: AuthorizationCodeRecord): Promise<void> {
    if (await this.store.authorizationCodes.wasReplayed(record.codeHash)) {
      await this.store.refreshTokens.revokeFamily(record.familyId, this.clock.now());
    }
  }

  private async replayed(record: AuthorizationCodeRecord): Promise<never> {
    const now = this.clock.now();
    await this.store.authorizationCodes.markReplayed(record.codeHash, now);
    await this.store.refreshTokens.revokeFamily(record.familyId, now);
    this.metrics.familyRevoked();
    throw new OAuthError("invalid_grant", "authorization code was already used; tokens issued from it are revoked");
  }
}
