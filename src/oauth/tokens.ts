import { createHash, randomUUID } from "node:crypto";
import { SignJWT } from "jose";
import { span, tracing } from "../shared/tracing.js";
import { epochSeconds, type Clock } from "../shared/clock.js";
import type { Store } from "../store/index.js";
import type { AccessTokenRecord, IssuedTokenRows } from "../store/tokens.js";
import { requestedClaims, storedClaimNames, type ClaimsRequest } from "./claimsRequest.js";
import { audienceOf } from "./resourceIndicators.js";
import type { KeyRing } from "./keys.js";
import { claimsForScopes, grantableScopes } from "./scopes.js";
import { randomToken, sha256 } from "./secrets.js";
import { casdoorUserClaims, usesCasdoorClaims } from "./tokenFormats.js";
import { storedUserinfoClaims, USERINFO_CLAIMS_CLAIM, userinfoClaimNames } from "./userinfoClaims.js";
import type { ApplicationRecord, UserRecord } from "../shared/model.js";
import { acrOf } from "./factors/amr.js";
import { isPublicClient } from "./publicClients.js";

/** What a grant hands to the minter. */
export interface Grant {
  app: ApplicationRecord;
  /** Absent for client_credentials: the token stands for the application. */
  user?: UserRecord;
  scopes: string[];
  /**
   * The scope recorded on the new refresh token, when not `scopes`: a refresh
   * that narrows the access token keeps the refresh token's scope (RFC 6749 §6).
   */
  refreshTokenScopes?: string[];
  /** RFC 8707: the resource URIs the access token is meant for, its `aud`; none keeps the client as its audience. */
  resources?: string[];
  /** The resources recorded on the new refresh token, when not `resources`: a narrowing refresh keeps the grant's (RFC 8707 §2.2). */
  refreshTokenResources?: string[];
  /**
   * The family the tokens join (an authorization code's, a refresh token's).
   * Otherwise a new one is started if a refresh token is issued, and none if
   * not: a family exists to be revoked as one.
   */
  familyId?: string;
  /** Epoch seconds of the user's authentication. */
  authTime?: number;
  /** What the user's authentication proved (RFC 8176); the ID token's `amr` and `acr`. */
  amr?: readonly string[];
  nonce?: string;
  /** The authorize request's `claims` (OIDC Core §5.5); its id_token member feeds the ID token. */
  claims?: ClaimsRequest;
  /** Issue an ID token (user grants with the openid scope). */
  idToken: boolean;
  /** Issue a refresh token (user grants). */
  refreshToken: boolean;
  /** The token's sub when no user is given and it is not the application itself (an exchanged client token, a workload). */
  subject?: string;
  /** The access token's aud, when not the application (token exchange: the target, RFC 8693 §2.1). */
  audience?: string;
  /** Claims beside the usual ones (`act`, RFC 8693 §4.1); a JWT then, whatever accessTokenStrategy says, as only a payload carries them. */
  extraClaims?: Record<string, unknown>;
  /** Epoch seconds the access token must not outlive (an exchanged token lasts no longer than its subject token). */
  notAfter?: number;
  /** RFC 8693 §2.2.1: said in the answer. */
  issuedTokenType?: string;
  /** The browser session the grant came from: the ID token's `sid` (Back-Channel Logout 1.0 §2.1), kept on the refresh token. */
  sid?: string;
}

/** What an ID token is made from. */
export type IdTokenGrant = Pick<Grant, "app" | "scopes" | "authTime" | "amr" | "nonce" | "claims" | "sid"> & {
  user: UserRecord;
  /** The access token issued beside it, whose hash becomes `at_hash`. */
  accessToken?: string;
  /** The code issued beside it (hybrid flow), whose hash becomes `c_hash`. */
  code?: string;
  /** The authorize request's state, whose hash becomes `s_hash` (FAPI 1.0 Advanced §5.2.2.1). */
  state?: string;
};

/**
 * An ID token's hash of a value it travels with (`at_hash`, `c_hash`; OIDC
 * Core §3.1.3.6, §3.2.2.9): the left half of the value's ASCII hashed with
 * the hash of the token's signing alg, base64url. EdDSA here is always
 * Ed25519, whose hash is SHA-512 (the rule OIDC Core's errata set 2 states
 * for Ed25519), so its hashes are the left 256 bits of a SHA-512.
 */
export function idTokenHash(value: string, alg: string): string {
  const bits = alg === "EdDSA" ? "512" : /^(?:RS|PS|ES|HS)(256|384|512)$/.exec(alg)?.[1];
  if (!bits) throw new Error(`no hash defined for alg ${alg}`);
  const digest = createHash(`sha${bits}`).update(value, "ascii").digest();
  return digest.subarray(0, digest.length / 2).toString("base64url");
}

/** RFC 6749 §5.1 token set, as the domain returns it. */
export interface TokenSet {
  accessToken: string;
  idToken?: string;
  refreshToken?: string;
  /** `DPoP` for a token bound to the key of the request's DPoP proof (RFC 9449 §5). */
  tokenType: "Bearer" | "DPoP";
  /** Seconds. */
  expiresIn: number;
  scope: string;
  /** RFC 8693 §2.2.1: the type of access_token, for a token exchange. */
  issuedTokenType?: string;
  /** Whom the tokens stand for, for the audit trail (never sent): absent for client_credentials. */
  user?: { id: string; name: string };
}

/** The refresh token a refresh response comes from (its SHA-256), and whether the response replaces it. */
export interface RefreshedFrom {
  tokenHash: string;
  rotates: boolean;
}

const HOUR = 3600;

/**
 * Mints and records tokens. Access and ID tokens are JWTs signed with the
 * application's signingAlg (RS256 unless set, keys.ts), or the access token
 * is opaque (accessTokenStrategy); refresh tokens are opaque. Each access
 * and refresh token gets a row keyed by the SHA-256 of its value, so it can
 * be introspected and revoked.
 */
export class TokenMinter {
  constructor(
    private readonly store: Store,
    private readonly keys: KeyRing,
    private readonly clock: Clock,
    private readonly issuer: string,
    /** RFC 9449: the thumbprint of the DPoP key every token minted is bound to. */
    private readonly dpopJkt?: string,
  ) {}

  /**
   * The minter of one token request whose DPoP proof was signed by the key
   * `jkt`: its access tokens carry `cnf.jkt` (RFC 9449 §6), and a public
   * client's refresh token is bound too (§5). Every grant mints through it,
   * so none can leave a token unbound.
   */
  boundTo(jkt: string | undefined): TokenMinter {
    return jkt === undefined ? this : new TokenMinter(this.store, this.keys, this.clock, this.issuer, jkt);
  }

  /**
   * Mints a grant's tokens and records them. With `refreshed`, the refresh
   * token this response comes from: rotated, it is consumed and the new rows
   * recorded all or nothing (RefreshTokenRepository.rotate); kept, the rows
   * are recorded only while it is live (issueKeeping). The answer is
   * undefined when it was consumed, revoked or expired first.
   */
  async mint(asked: Grant): Promise<TokenSet>;
  async mint(asked: Grant, refreshed: RefreshedFrom): Promise<TokenSet | undefined>;
  async mint(asked: Grant, refreshed?: RefreshedFrom): Promise<TokenSet | undefined> {
    const grant = withGrantableScopes(asked);
    const { app, user } = grant;
    const now = epochSeconds(this.clock);
    const expiresIn = Math.max(0, Math.min(app.expireInHours * HOUR, (grant.notAfter ?? Infinity) - now));
    const scope = grant.scopes.join(" ");
    const authTime = grant.authTime ?? now;
    const { kid, alg, key } = await this.keys.signingKey(app.signingAlg);
    const sign = (payload: Record<string, unknown>, typ: string) =>
      signJwt(payload, { alg, kid, typ }, key);

    const jti = randomUUID();
    const subject = user ? user.id : grant.subject ?? app.clientId;
    const accessClaims: Record<string, unknown> = {
      // First, so that none of them can stand in for a claim below.
      ...grant.extraClaims,
      iss: this.issuer,
      sub: subject,
      aud: grant.audience ?? audienceOf(grant.resources, app.clientId),
      azp: app.clientId,
      client_id: app.clientId,
      exp: now + expiresIn,
      iat: now,
      nbf: now,
      jti,
      scope,
      // RFC 9449 §6.1: the key the token is bound to.
      ...(this.dpopJkt ? { cnf: { jkt: this.dpopJkt } } : {}),
    };
    const userinfoClaims = user ? addUserClaims(accessClaims, grant, user, authTime) : [];
    const wantsIdToken = grant.idToken && user !== undefined && grant.scopes.includes("openid");
    // Opaque (accessTokenStrategy): 256 random bits, read only through its row (accessTokens.ts).
    // A token with extra claims or a subject of its own is a JWT: an opaque token's row holds neither.
    const opaque = app.accessTokenStrategy === "opaque" && !grant.extraClaims && grant.subject === undefined;
    const accessToken = opaque ? randomToken() : await sign(accessClaims, "at+jwt");
    // After the access token: the ID token carries its at_hash.
    const idToken = wantsIdToken ? await sign(this.idTokenClaims({ ...grant, user, accessToken }, now), "JWT") : undefined;
    // A refresh token continues the grant's family or starts one; without it
    // the access token joins the grant's family (a code's), or none.
    const refresh = grant.refreshToken && user ? { token: randomToken(), familyId: grant.familyId ?? randomUUID() } : undefined;
    const familyId = refresh?.familyId ?? grant.familyId ?? null;
    const idTokenClaims = refresh && storedClaimNames(grant.claims, "id_token");

    const nowMs = now * 1000;
    const rows: IssuedTokenRows = {
      access: {
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
        ...(grant.resources?.length ? { resources: grant.resources } : {}),
        // An opaque token has no payload to carry them (userinfoClaims.ts), nor how its user signed in.
        ...(opaque && userinfoClaims.length > 0 ? { userinfoClaims: storedUserinfoClaims(grant.claims) } : {}),
        ...(opaque ? storedAuthentication(accessClaims) : {}),
        ...(this.dpopJkt ? { dpopJkt: this.dpopJkt } : {}),
      },
      refresh: refresh
        ? {
            tokenHash: sha256(refresh.token),
            familyId: refresh.familyId,
            clientId: app.clientId,
            userId: user?.id ?? null,
            scope: grant.refreshTokenScopes?.join(" ") ?? scope,
            authTime,
            ...(grant.amr?.length ? { amr: grant.amr.join(" ") } : {}),
            issuedAt: nowMs,
            // refreshExpireInHours = 0 (the spec's default) makes it unusable at once.
            expiresAt: nowMs + app.refreshExpireInHours * HOUR * 1000,
            consumedAt: null,
            revokedAt: null,
            ...(userinfoClaims.length > 0 ? { userinfoClaims: storedUserinfoClaims(grant.claims) } : {}),
            // OIDC Core §5.5: what the grant asked the ID token for outlives the refresh too.
            ...(idTokenClaims ? { idTokenClaims } : {}),
            resources: grant.refreshTokenResources ?? grant.resources,
            // RFC 9449 §5: a public client's refresh token is bound to its key; a confidential client's to its credentials.
            ...(this.dpopJkt && isPublicClient(app) ? { dpopJkt: this.dpopJkt } : {}),
            ...(grant.sid ? { sid: grant.sid } : {}),
          }
        : undefined,
    };
    if (refreshed === undefined) await this.store.issuedTokens.add(rows);
    else if (!(await this.recordRefreshed(refreshed, rows))) return undefined;

    const issued = { accessToken, idToken, refreshToken: refresh?.token, tokenType: this.dpopJkt ? ("DPoP" as const) : ("Bearer" as const), expiresIn, scope, user: user && { id: user.id, name: user.name } };
    return grant.issuedTokenType ? { ...issued, issuedTokenType: grant.issuedTokenType } : issued;
  }

  private recordRefreshed(refreshed: RefreshedFrom, rows: IssuedTokenRows): Promise<boolean> {
    const at = this.clock.now();
    return refreshed.rotates ? this.store.refreshTokens.rotate(refreshed.tokenHash, at, rows) : this.store.refreshTokens.issueKeeping(refreshed.tokenHash, at, rows);
  }

  /**
   * An ID token without a token row, for response_type=id_token (OIDC Core
   * §3.2), or beside an implicit access token (`grant.accessToken`, for
   * at_hash). Nothing stores a row for it, so its key is held published
   * until it expires.
   */
  async mintIdToken(grant: IdTokenGrant): Promise<string> {
    const now = epochSeconds(this.clock);
    const { kid, alg, key } = await this.keys.signingKey(grant.app.signingAlg);
    const claims = this.idTokenClaims(grant, now);
    const idToken = await signJwt(claims, { alg, kid, typ: "JWT" }, key);
    await this.store.signingKeys.holdUntil(kid, (claims.exp as number) * 1000);
    return idToken;
  }

  private idTokenClaims(grant: IdTokenGrant, now: number): Record<string, unknown> {
    const { app, user } = grant;
    return {
      // The application's token format: OIDC's claims of the scopes, or Casdoor's user object.
      ...(usesCasdoorClaims(app.tokenFormat) ? casdoorUserClaims(user) : claimsForScopes(user, grant.scopes)),
      // OIDC Core §5.5: claims asked for in the ID token, whatever the scope.
      ...requestedClaims(user, grant.claims, "id_token"),
      iss: this.issuer,
      sub: user.id,
      aud: app.clientId,
      azp: app.clientId,
      exp: now + app.expireInHours * HOUR,
      iat: now,
      auth_time: grant.authTime ?? now,
      ...authenticationClaims(grant.amr),
      ...(grant.nonce ? { nonce: grant.nonce } : {}),
      ...(grant.sid ? { sid: grant.sid } : {}),
      ...(grant.accessToken ? { at_hash: idTokenHash(grant.accessToken, app.signingAlg) } : {}),
      ...(grant.code ? { c_hash: idTokenHash(grant.code, app.signingAlg) } : {}),
      ...(grant.state ? { s_hash: idTokenHash(grant.state, app.signingAlg) } : {}),
    };
  }
}

/** A signed JWT, in a span when tracing (its header's alg, kid and typ, never its claims). */
function signJwt(payload: Record<string, unknown>, header: { alg: string; kid: string; typ: string }, key: Parameters<SignJWT["sign"]>[0]): Promise<string> {
  if (!tracing()) return new SignJWT(payload).setProtectedHeader(header).sign(key);
  const attributes = { "jwt.alg": header.alg, "jwt.kid": header.kid, "jwt.typ": header.typ };
  return span("jwt sign", "internal", attributes, () => new SignJWT(payload).setProtectedHeader(header).sign(key));
}

/** OIDC Core §2 `acr` and `amr` (RFC 8176 values), when the sign-in's methods are known. */
function authenticationClaims(amr: readonly string[] | undefined): { acr?: string; amr?: string[] } {
  return amr?.length ? { acr: acrOf(amr), amr: [...amr] } : {};
}

/** Every grant passes here, so no grant can hand the admin scope to someone who may not have it. */
function withGrantableScopes(grant: Grant): Grant {
  const grantable = (scopes: string[]) => grantableScopes(scopes, grant.app.clientId, grant.user);
  return { ...grant, scopes: grantable(grant.scopes), refreshTokenScopes: grant.refreshTokenScopes && grantable(grant.refreshTokenScopes) };
}

/**
 * The signed-in user's claims in an access token; returns the userinfo
 * claims the grant asked for (OIDC Core §5.5), which travel in the token
 * (userinfoClaims.ts).
 */
function addUserClaims(accessClaims: Record<string, unknown>, grant: Grant, user: UserRecord, authTime: number): string[] {
  const userinfoClaims = userinfoClaimNames(grant.claims);
  if (userinfoClaims.length > 0) accessClaims[USERINFO_CLAIMS_CLAIM] = userinfoClaims;
  if (usesCasdoorClaims(grant.app.tokenFormat)) {
    Object.assign(accessClaims, casdoorUserClaims(user));
  } else {
    accessClaims.name = user.displayName || user.name;
    accessClaims.preferred_username = user.name;
  }
  // RFC 9068 §2.2.1: how the user authenticated, for introspection and userinfo to report.
  if (grant.amr?.length) Object.assign(accessClaims, { auth_time: authTime }, authenticationClaims(grant.amr));
  return userinfoClaims;
}

/**
 * What an opaque token's row keeps of how its user signed in: what its JWT
 * would carry (addUserClaims), so both kinds say the same. A JWT's row keeps
 * none, as its payload says it and the row of every token stays small.
 */
function storedAuthentication(accessClaims: Record<string, unknown>): Pick<AccessTokenRecord, "authTime" | "acr" | "amr"> {
  const { auth_time: authTime, acr, amr } = accessClaims;
  if (typeof authTime !== "number" || typeof acr !== "string" || !Array.isArray(amr)) return {};
  return { authTime, acr, amr: amr.join(" ") };
}
