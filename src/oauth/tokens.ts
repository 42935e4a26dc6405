import { randomUUID } from "node:crypto";
import { SignJWT } from "jose";
import { epochSeconds, type Clock } from "../clock.js";
import type { ApplicationRecord } from "../store/applications.js";
import type { Store } from "../store/index.js";
import type { UserRecord } from "../store/users.js";
import { SIGNING_ALG, type KeyRing } from "./keys.js";
import { claimsForScopes } from "./scopes.js";
import { randomToken, sha256 } from "./secrets.js";

/** What a grant hands to the minter. */
export interface Grant {
  app: ApplicationRecord;
  /** Absent for client_credentials: the token stands for the application. */
  user?: UserRecord;
  scopes: string[];
  /** Continues an existing family (refresh); a new one is started otherwise. */
  familyId?: string;
  /** Epoch seconds of the user's authentication. */
  authTime?: number;
  nonce?: string;
  /** Issue an ID token (user grants with the openid scope). */
  idToken: boolean;
  /** Issue a refresh token (user grants). */
  refreshToken: boolean;
}

/** RFC 6749 §5.1 token set, as the domain returns it. */
export interface TokenSet {
  accessToken: string;
  idToken?: string;
  refreshToken?: string;
  tokenType: "Bearer";
  /** Seconds. */
  expiresIn: number;
  scope: string;
}

const HOUR = 3600;

/**
 * Mints and records tokens. Access and ID tokens are RS256 JWTs; refresh
 * tokens are opaque. Each access and refresh token gets a row keyed by the
 * SHA-256 of its value, so it can be introspected and revoked.
 */
export class TokenMinter {
  constructor(
    private readonly store: Store,
    private readonly keys: KeyRing,
    private readonly clock: Clock,
    private readonly issuer: string,
  ) {}

  async mint(grant: Grant): Promise<TokenSet> {
    const { app, user } = grant;
    const now = epochSeconds(this.clock);
    const expiresIn = app.expireInHours * HOUR;
    const scope = grant.scopes.join(" ");
    const familyId = grant.familyId ?? randomUUID();
    const authTime = grant.authTime ?? now;
    const { kid, key } = await this.keys.signingKey();
    const sign = (payload: Record<string, unknown>, typ: string) =>
      new SignJWT(payload).setProtectedHeader({ alg: SIGNING_ALG, kid, typ }).sign(key);

    const jti = randomUUID();
    const subject = user ? user.id : app.clientId;
    const accessClaims: Record<string, unknown> = {
      iss: this.issuer,
      sub: subject,
      aud: app.clientId,
      azp: app.clientId,
      client_id: app.clientId,
      exp: now + expiresIn,
      iat: now,
      nbf: now,
      jti,
      scope,
    };
    if (user) {
      accessClaims.name = user.displayName || user.name;
      accessClaims.preferred_username = user.name;
    }
    const wantsIdToken = grant.idToken && user !== undefined && grant.scopes.includes("openid");
    const [accessToken, idToken] = await Promise.all([
      sign(accessClaims, "at+jwt"),
      wantsIdToken
        ? sign(
            {
              ...claimsForScopes(user, grant.scopes),
              iss: this.issuer,
              sub: user.id,
              aud: app.clientId,
              azp: app.clientId,
              exp: now + expiresIn,
              iat: now,
              auth_time: authTime,
              ...(grant.nonce ? { nonce: grant.nonce } : {}),
            },
            "JWT",
          )
        : undefined,
    ]);
    const refreshToken = grant.refreshToken && user ? randomToken() : undefined;

    const nowMs = now * 1000;
    await this.store.db.transaction(async (trx) => {
      await this.store.accessTokens.insert(
        {
          tokenHash: sha256(accessToken),
          jti,
          familyId,
          clientId: app.clientId,
          userId: user?.id ?? null,
          scope,
          issuedAt: nowMs,
          expiresAt: nowMs + expiresIn * 1000,
          revokedAt: null,
          kid,
        },
        trx,
      );
      if (refreshToken) {
        await this.store.refreshTokens.insert(
          {
            tokenHash: sha256(refreshToken),
            familyId,
            clientId: app.clientId,
            userId: user?.id ?? null,
            scope,
            authTime,
            issuedAt: nowMs,
            // refreshExpireInHours = 0 (the spec's default) makes it unusable at once.
            expiresAt: nowMs + app.refreshExpireInHours * HOUR * 1000,
            consumedAt: null,
            revokedAt: null,
          },
          trx,
        );
      }
    });

    return { accessToken, idToken, refreshToken, tokenType: "Bearer", expiresIn, scope };
  }
}
