import { createLocalJWKSet, errors as joseErrors, jwtVerify, type JSONWebKeySet, type JWTPayload } from "jose";
import { DEFAULT_USER_MAPPING, mapProfile } from "../userMapping.js";
import { UpstreamError, type UpstreamClient } from "../upstream.js";
import { insecureUrlProblem } from "../urlRule.js";
import { customType, requestTokens } from "./custom.js";
import type { ProviderConfig, ProviderType } from "./providerType.js";

/** How long a discovery document or a JWKS is used before it is read again (a key the provider withdrew stops verifying). */
const DISCOVERY_TTL_MS = 60 * 60 * 1000;
/** Asymmetric algorithms only: a client secret never verifies an ID token here. */
const ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"];

interface Discovery {
  issuer: string;
  authorizationEndpoint: string;
  tokenEndpoint: string;
  jwksUri: string;
  issParameterSupported: boolean;
  readAt: number;
}

const discoveries = new Map<string, Discovery>();
const keySets = new Map<string, { jwks: JSONWebKeySet; readAt: number }>();

/** OpenID Connect Discovery 1.0 §4: the document at the issuer, whose `issuer` must be the configured one. */
async function discover(upstream: UpstreamClient, config: ProviderConfig): Promise<Discovery> {
  // Keyed by the https rule too: a provider held to https never uses endpoints another provider was allowed over http.
  const key = `${config.allowInsecureUrls ? "insecure" : "https"} ${config.issuer}`;
  const cached = discoveries.get(key);
  if (cached && upstream.now() - cached.readAt < DISCOVERY_TTL_MS) return cached;
  const url = `${config.issuer.replace(/\/$/, "")}/.well-known/openid-configuration`;
  const body = await upstream.requestJson("discovery", url, { method: "GET" });
  if (body.issuer !== config.issuer) throw new UpstreamError("discovery", "names another issuer than the provider's", "invalid");
  const endpoint = (field: string): string => {
    const value = body[field];
    if (typeof value !== "string") throw new UpstreamError("discovery", `has no ${field}`);
    const problem = insecureUrlProblem(value, config.allowInsecureUrls);
    if (problem) throw new UpstreamError("discovery", `has a ${field} that ${problem}`, "invalid");
    return value;
  };
  const found: Discovery = {
    issuer: config.issuer,
    authorizationEndpoint: endpoint("authorization_endpoint"),
    tokenEndpoint: endpoint("token_endpoint"),
    jwksUri: endpoint("jwks_uri"),
    issParameterSupported: body.authorization_response_iss_parameter_supported === true,
    readAt: upstream.now(),
  };
  discoveries.set(key, found);
  return found;
}

async function readKeys(upstream: UpstreamClient, jwksUri: string): Promise<JSONWebKeySet> {
  const body = await upstream.requestJson("jwks", jwksUri, { method: "GET" });
  if (!Array.isArray(body.keys)) throw new UpstreamError("jwks", "has no keys");
  const jwks = body as unknown as JSONWebKeySet;
  keySets.set(jwksUri, { jwks, readAt: upstream.now() });
  return jwks;
}

/** The ID token's claims, its signature checked against the provider's JWKS (read again once for an unknown kid). */
async function verifyIdToken(upstream: UpstreamClient, config: ProviderConfig, discovery: Discovery, idToken: string): Promise<JWTPayload> {
  // OIDC Core §2: exp and iat are required (jose checks exp only when present); sub is the link's key.
  const options = { issuer: discovery.issuer, audience: config.clientId, algorithms: ALGORITHMS, clockTolerance: 60, requiredClaims: ["exp", "iat", "sub"] };
  const stored = keySets.get(discovery.jwksUri);
  const cached = stored && upstream.now() - stored.readAt < DISCOVERY_TTL_MS ? stored : undefined;
  const jwks = cached?.jwks ?? (await readKeys(upstream, discovery.jwksUri));
  try {
    try {
      return (await jwtVerify(idToken, createLocalJWKSet(jwks), options)).payload;
    } catch (err) {
      // A key the cached set lacks: the provider may have rotated; read the set again, once.
      // (ID tokens come from its token endpoint, never from the browser, so no one else can force reads.)
      if (!(err instanceof joseErrors.JWKSNoMatchingKey) || !cached) throw err;
      return (await jwtVerify(idToken, createLocalJWKSet(await readKeys(upstream, discovery.jwksUri)), options)).payload;
    }
  } catch (err) {
    if (err instanceof UpstreamError) throw err;
    throw new UpstreamError("id_token", idTokenProblem(err), "invalid");
  }
}

/** jose's refusal in our own words (never the token). */
function idTokenProblem(err: unknown): string {
  if (err instanceof joseErrors.JWTClaimValidationFailed) return `is not valid: its ${err.claim} claim ${err.reason === "check_failed" ? "does not match" : "is missing or wrong"}`;
  if (err instanceof joseErrors.JWTExpired) return "has expired";
  if (err instanceof joseErrors.JWSSignatureVerificationFailed) return "has a signature that does not verify";
  if (err instanceof joseErrors.JWKSNoMatchingKey) return "is signed with a key the provider's JWKS does not have";
  if (err instanceof joseErrors.JOSEAlgNotAllowed) return "is signed with an algorithm that is not accepted";
  return "could not be read";
}

/**
 * An OpenID Connect provider, configured by its `issuer`: discovery gives
 * the endpoints and the JWKS (both cached). Every round trip sends PKCE
 * (S256) and a nonce; the ID token's signature, iss, aud, exp, nonce and azp
 * are checked, and the profile is read from its claims, merged with the
 * UserInfo answer when the provider sets `userInfoUrl`.
 */
export const oidcType: ProviderType = {
  required: ["clientId", "clientSecret", "issuer"],
  preset: {
    authUrl: "",
    tokenUrl: "",
    userInfoUrl: "",
    scope: "openid profile email",
    favicon: "",
    userMapping: { id: "sub" },
  },
  alwaysPkce: true,
  checksCallbackIssuer: true,

  async prepare(upstream, config) {
    const discovery = await discover(upstream, config);
    return {
      ...config,
      authUrl: config.authUrl || discovery.authorizationEndpoint,
      tokenUrl: config.tokenUrl || discovery.tokenEndpoint,
      issParameterRequired: discovery.issParameterSupported,
    };
  },

  authorizeUrl: customType.authorizeUrl,

  async signIn(upstream, config, exchange) {
    const discovery = await discover(upstream, config);
    const tokens = await requestTokens(upstream, config, exchange);
    if (typeof tokens.id_token !== "string") throw new UpstreamError("token", "sent no id_token");
    const claims = await verifyIdToken(upstream, config, discovery, tokens.id_token);
    if (claims.nonce !== exchange.nonce) throw new UpstreamError("id_token", "is not valid: its nonce claim does not match", "invalid");
    // OIDC Core §2: azp, when present (and required with several audiences), is us.
    const audiences = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
    if ((claims.azp !== undefined || audiences.length > 1) && claims.azp !== config.clientId) {
      throw new UpstreamError("id_token", "is not valid: its azp claim does not match", "invalid");
    }
    let merged: Record<string, unknown> = { ...claims };
    if (config.userInfoUrl) {
      const userinfo = await upstream.requestJson("userinfo", config.userInfoUrl, {
        method: "GET",
        headers: { authorization: `Bearer ${tokens.access_token as string}` },
      });
      // OIDC Core §5.3.4: another sub is another user.
      if (userinfo.sub !== claims.sub) throw new UpstreamError("userinfo", "describes another user than the ID token", "invalid");
      merged = { ...userinfo, ...claims };
    }
    const profile = mapProfile(merged, config.userMapping);
    // OIDC Core §5.1: an email without email_verified: true is not known to be the user's, so trustEmail does not link by it.
    // email_verified speaks of the `email` claim only: an email mapped from another claim is not known to be verified.
    const emailPath = config.userMapping.email || DEFAULT_USER_MAPPING.email;
    profile.emailVerified = emailPath === "email" && merged.email_verified === true;
    return profile;
  },
};
