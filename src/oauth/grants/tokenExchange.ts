import { createLocalJWKSet, jwtVerify } from "jose";
import { epochSeconds } from "../../shared/clock.js";
import type { UserRecord } from "../../shared/model.js";
import { findActiveAccessToken, type AccessTokenClaims } from "../accessTokens.js";
import { OAuthError } from "../errors.js";
import { parseScope } from "../scopes.js";
import { requireParam } from "./params.js";
import { defineGrant, type GrantDeps } from "./types.js";

/** RFC 8693 §2.1. */
export const TOKEN_EXCHANGE_GRANT_TYPE = "urn:ietf:params:oauth:grant-type:token-exchange";
/** RFC 8693 §3: the token types this service takes and issues. */
export const ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token";
export const ID_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id_token";

/** What a subject token stands for: its user (or client), its scopes, and how long it lives. */
interface Subject {
  user?: UserRecord;
  /** sub of a token that stands for a client (client_credentials). */
  sub: string;
  scopes: string[];
  /** Epoch seconds. */
  exp: number;
  authTime?: number;
}

/** One of our live access tokens, or refused as RFC 8693 §2.2.2 says: invalid_grant. */
async function ourAccessToken(deps: GrantDeps, token: string, what: string) {
  const found = await findActiveAccessToken(deps.store, deps.clock, token);
  if (!found) throw new OAuthError("invalid_grant", `the ${what} is not an active access token of this service`);
  return found;
}

async function subjectOf(deps: GrantDeps, token: string, type: string): Promise<Subject> {
  if (type === ACCESS_TOKEN_TYPE) {
    const { record, claims } = await ourAccessToken(deps, token, "subject_token");
    const user = record.userId ? await deps.store.users.findById(record.userId) : undefined;
    return { user, sub: String(claims.sub), scopes: record.scope.split(" ").filter(Boolean), exp: Math.floor(record.expiresAt / 1000) };
  }
  if (type === ID_TOKEN_TYPE) {
    let payload;
    try {
      ({ payload } = await jwtVerify(token, createLocalJWKSet({ keys: await deps.keys.publicJwks() }), {
        issuer: deps.issuer,
        // Ours are typ JWT; an access token (at+jwt, RFC 9068) is no ID token.
        typ: "JWT",
        currentDate: new Date(deps.clock.now()),
        requiredClaims: ["sub", "exp"],
      }));
    } catch {
      throw new OAuthError("invalid_grant", "the subject_token is not a valid ID token of this service");
    }
    const user = await deps.store.users.findById(payload.sub!);
    if (!user || user.disabled) throw new OAuthError("invalid_grant", "the user of the subject_token is no longer active");
    // An ID token carries no scope: it proves the sign-in, so openid is all it can pass on.
    return { user, sub: user.id, scopes: ["openid"], exp: payload.exp!, authTime: typeof payload.auth_time === "number" ? payload.auth_time : undefined };
  }
  throw new OAuthError("invalid_request", `subject_token_type must be ${ACCESS_TOKEN_TYPE} or ${ID_TOKEN_TYPE}`);
}

/** RFC 8693 §4.1: the actor, with the chain it acted in (its own act) nested. */
function actClaim(claims: AccessTokenClaims, clientId: string): Record<string, unknown> {
  const prior = (claims as Record<string, unknown>).act;
  return { sub: claims.sub, client_id: clientId, ...(prior ? { act: prior } : {}) };
}

/**
 * Token Exchange (RFC 8693): a service trades a token it received (the
 * subject token, one of ours) for one aimed at another service (`audience`
 * or `resource`, listed in its exchangeAudiences). With an actor token the
 * new token is delegation and names the actor in `act`; without one it is
 * impersonation, which the application must allow. The new token's scope is
 * within the subject token's, it lasts no longer, and comes with no refresh
 * token.
 */
export const tokenExchangeGrant = defineGrant({
  grantType: TOKEN_EXCHANGE_GRANT_TYPE,
  shortName: "token_exchange",
  parameters: ["subjectToken", "subjectTokenType", "actorToken", "actorTokenType", "audience", "resource", "requestedTokenType", "scope"],
  alwaysEnabled: false,
  needsSecret: true,
  async handle(app, params, deps) {
    const subjectToken = requireParam(params.subjectToken, "subject_token");
    const subjectTokenType = requireParam(params.subjectTokenType, "subject_token_type");
    if (params.requestedTokenType && params.requestedTokenType !== ACCESS_TOKEN_TYPE) {
      throw new OAuthError("invalid_request", `requested_token_type may only be ${ACCESS_TOKEN_TYPE}`);
    }
    if (params.audience && params.resource.length > 0) throw new OAuthError("invalid_request", "send audience or resource, not both");
    // One target per exchanged token: its aud is that one audience or resource.
    if (params.resource.length > 1) throw new OAuthError("invalid_target", "name one resource: the exchanged token is for one target");
    const target = params.audience || params.resource[0];
    // §2.2.2: a target the application may not reach.
    if (!target || !app.exchangeAudiences.includes(target)) {
      throw new OAuthError("invalid_target", "the audience or resource is not one this application may exchange tokens for");
    }
    const subject = await subjectOf(deps, subjectToken, subjectTokenType);
    if (subject.user?.disabled) throw new OAuthError("invalid_grant", "the user of the subject_token is no longer active");
    const asked = params.scope ? parseScope(params.scope) : subject.scopes;
    const widened = asked.filter((s) => !subject.scopes.includes(s));
    if (widened.length > 0) throw new OAuthError("invalid_scope", `the subject_token does not carry ${widened.join(" ")}`);
    let act: Record<string, unknown> | undefined;
    if (params.actorToken) {
      if (params.actorTokenType && params.actorTokenType !== ACCESS_TOKEN_TYPE) {
        throw new OAuthError("invalid_request", `actor_token_type must be ${ACCESS_TOKEN_TYPE}`);
      }
      const actor = await ourAccessToken(deps, params.actorToken, "actor_token");
      act = actClaim(actor.claims, actor.record.clientId);
    } else if (!app.allowImpersonation) {
      throw new OAuthError("unauthorized_client", "this application may not exchange a token without an actor_token (impersonation)");
    }
    return deps.minter.mint({
      app,
      user: subject.user,
      subject: subject.sub,
      scopes: asked,
      audience: target,
      // Always a JWT (extraClaims), whose payload carries the target and act for introspection.
      extraClaims: act ? { act } : {},
      notAfter: subject.exp,
      authTime: subject.authTime ?? epochSeconds(deps.clock),
      idToken: false,
      refreshToken: false,
      issuedTokenType: ACCESS_TOKEN_TYPE,
    });
  },
});
