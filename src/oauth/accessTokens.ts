import { decodeJwt, type JWTPayload } from "jose";
import type { Clock } from "../shared/clock.js";
import type { Store } from "../store/index.js";
import type { AccessTokenRecord } from "../store/tokens.js";
import { parseAmr } from "./factors/amr.js";
import { proofError, type DPoPProofs, type PresentedToken } from "./dpop.js";
import { OAuthError } from "./errors.js";
import { dpopAlgsFor } from "./fapi2.js";
import { audienceOf } from "./resourceIndicators.js";
import { sha256 } from "./secrets.js";
import type { UserRecord } from "../shared/model.js";

export type AccessTokenClaims = Readonly<JWTPayload & { scope?: string; preferred_username?: string; client_id?: string }>;

export interface ActiveAccessToken {
  record: AccessTokenRecord;
  /** The user's name, from the same read as the token; undefined for a client's token. */
  username?: string;
  /** A JWT's payload; for an opaque token, what its row says (sub, aud, client_id, times, jti, scope, how its user signed in). */
  claims: AccessTokenClaims;
  /** An opaque token (accessTokenStrategy): its claims lack iss and the user's names. */
  opaque: boolean;
}

// A JWT we minted is three base64url parts, an opaque token 32 random bytes
// in base64url; anything else is not worth a lookup.
const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;
const OPAQUE_SHAPE = /^[A-Za-z0-9_-]{43}$/;
const MAX_TOKEN_LENGTH = 8192;

/**
 * Finds an access token that is ours, unrevoked, inside its validity window,
 * and whose application and user (if it has one) still stand. Every token we
 * issue has a row keyed by the SHA-256 of its exact value, so a hit proves
 * authenticity without a signature check: a forged, re-signed or
 * `alg: none` token hashes to nothing we stored. The same read joins the
 * user and application rows, so a disabled or deleted user, or a deleted
 * application, ends the token on the next lookup, on every instance.
 */
export async function findActiveAccessToken(
  store: Pick<Store, "accessTokens">,
  clock: Clock,
  token: string,
): Promise<ActiveAccessToken | undefined> {
  if (!hasOurShape(token)) return undefined;
  const hash = sha256(token);
  const found = await store.accessTokens.findStandingByHash(hash);
  if (!found || !isLive(found.token, clock.now()) || !found.applicationExists) return undefined;
  if (found.token.userId !== null && (!found.user || found.user.disabled)) return undefined;
  return { record: found.token, username: found.user?.name, claims: accessTokenClaimsOf(found.token, hash, token), opaque: OPAQUE_SHAPE.test(token) };
}

/**
 * A token's payload never changes, and a resource server introspects the
 * same token on every call it serves, so each instance keeps the decoded
 * payloads of tokens it has found, by hash (decoding was ~7% of an
 * introspection's CPU). Only tokens with a live row get here, and the row is
 * still looked up on every call (the store may answer from rows it keeps
 * while the database is unchanged): revocation and expiry do not depend on
 * this.
 */
const claimsByHash = new Map<string, AccessTokenClaims>();
const CLAIMS_CACHE_LIMIT = 10_000;

function claimsOf(hash: string, token: string): AccessTokenClaims {
  let claims = claimsByHash.get(hash);
  if (!claims) {
    claims = Object.freeze(decodeJwt(token));
    if (claimsByHash.size >= CLAIMS_CACHE_LIMIT) claimsByHash.clear();
    claimsByHash.set(hash, claims);
  }
  return claims;
}

/**
 * An opaque token's claims, from its row: what its JWT would have said of
 * it, without the user's names. How its user signed in (RFC 9068 §2.2.1) is
 * there when its minting kept it (tokens.ts storedAuthentication).
 */
function opaqueClaims(record: AccessTokenRecord): AccessTokenClaims {
  const seconds = (ms: number) => Math.floor(ms / 1000);
  return Object.freeze({
    ...(record.authTime !== undefined ? { auth_time: record.authTime } : {}),
    ...(record.acr ? { acr: record.acr } : {}),
    ...(record.amr ? { amr: parseAmr(record.amr) } : {}),
    sub: record.userId ?? record.clientId,
    aud: audienceOf(record.resources, record.clientId),
    client_id: record.clientId,
    exp: seconds(record.expiresAt),
    iat: seconds(record.issuedAt),
    nbf: seconds(record.issuedAt),
    jti: record.jti,
    scope: record.scope,
  });
}

const hasOurShape = (token: string) => token.length <= MAX_TOKEN_LENGTH && (JWT_SHAPE.test(token) || OPAQUE_SHAPE.test(token));

const isLive = (record: AccessTokenRecord, now: number) =>
  record.revokedAt === null && record.expiresAt > now && record.issuedAt <= now;

/**
 * The live access token of an enabled user, for the APIs that act for a user
 * (userinfo, account, admin calls), whose application still exists, presented
 * as its binding asks (RFC 9449 §7.1): a DPoP-bound token with
 * `Authorization: DPoP` and a proof of its key for this request, any other
 * as Bearer. Anything else is `invalid_token` (RFC 6750 §3.1), or the proof's
 * own error. Token, user and application come from one read, as of one moment.
 */
export async function requireUserToken(
  store: Store,
  clock: Clock,
  presented: PresentedToken | undefined,
  dpop: Pick<DPoPProofs, "verify">,
): Promise<{ record: AccessTokenRecord; user: UserRecord; hash: string }> {
  const invalid = (why: string) => (presented?.scheme === "DPoP" ? proofError("resource", "invalid_token", why) : new OAuthError("invalid_token", why));
  const token = presented?.token;
  if (!token) throw invalid("an access token is required");
  const hash = hasOurShape(token) ? sha256(token) : undefined;
  const found = hash ? await store.accessTokens.findWithUserByHash(hash) : undefined;
  if (!found) throw invalid("the access token is invalid, expired or revoked");
  // What ended the token, before the revocation that came with it (revocations.ts), when that says more.
  if (!found.applicationExists) throw invalid("the application of this access token was deleted");
  const { token: record, user } = found;
  if (record.userId !== null && (!user || user.disabled)) throw invalid("the user of this access token is disabled or deleted");
  if (!isLive(record, clock.now())) throw invalid("the access token is invalid, expired or revoked");
  if (!user) throw invalid("no user is bound to this access token (it stands for a client)");
  await checkPossession(record, presented!, dpop, dpopAlgsFor({ profile: found.applicationProfile }));
  return { record, user, hash: hash! };
}

/** RFC 9449 §7.1, §7.2: a bound token only with a proof of its key, and the DPoP scheme only for a bound token. */
async function checkPossession(record: AccessTokenRecord, presented: PresentedToken, dpop: Pick<DPoPProofs, "verify">, algorithms: readonly string[] | undefined): Promise<void> {
  if (presented.scheme === "Bearer") {
    if (record.dpopJkt === undefined) return;
    throw proofError("resource", "invalid_token", "this access token is DPoP-bound: present it with Authorization: DPoP and a DPoP proof of its key");
  }
  if (record.dpopJkt === undefined) throw proofError("resource", "invalid_token", "this access token is not DPoP-bound: present it as a Bearer token");
  const jkt = await dpop.verify(presented.dpop ?? { proof: undefined, htm: "", htu: "" }, "resource", presented.token, algorithms);
  if (jkt !== record.dpopJkt) throw proofError("resource", "invalid_dpop_proof", "the DPoP proof is signed by another key than the one this access token is bound to");
}

/**
 * A found token's claims: a JWT's payload, from the same per-instance cache
 * introspection uses, or an opaque token's, from its row. Either way what
 * its minting said of it, so callers need not tell them apart.
 */
export function accessTokenClaimsOf(record: AccessTokenRecord, hash: string, token: string): AccessTokenClaims {
  return OPAQUE_SHAPE.test(token) ? opaqueClaims(record) : claimsOf(hash, token);
}
