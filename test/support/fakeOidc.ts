import { randomBytes } from "node:crypto";
import type { ServerResponse } from "node:http";
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from "jose";
import { decodeBasic, pkceHolds, sendJsonBody, startFakeProvider, type FakeProvider } from "./fakeUpstream.js";

/** Our registration at the fake OpenID provider. */
export const OIDC_CLIENT = { clientId: "oidc-client", clientSecret: "oidc secret" };
/** A code the fake accepts without a visit to its authorize page, for tests that call our /callback themselves. */
export const OIDC_CODE = "oidc-code-1";
/** The access token the fake issues; its UserInfo accepts only this one. */
export const OIDC_ACCESS_TOKEN = "oidc-at";

export interface SigningKey {
  kid: string;
  privateKey: CryptoKey;
  jwk: JWK;
}

export async function newSigningKey(kid = randomBytes(4).toString("hex")): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair("ES256");
  return { kid, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg: "ES256", use: "sig" } };
}

/** What the next ID token says, and with which key it is signed; a test changes one thing. */
export interface TokenPlan {
  claims: Record<string, unknown>;
  iss?: string;
  aud?: string | string[];
  key?: SigningKey;
  /** The `exp` claim; null for none. Five minutes ahead unless told. */
  exp?: number | null;
}

export interface FakeOidc extends FakeProvider {
  /** The client it knows: its token endpoint checks these credentials, its ID tokens name this audience. OIDC_CLIENT unless told. */
  client: { clientId: string; clientSecret: string };
  /** The keys its JWKS publishes; the first signs unless the plan says otherwise. */
  published: SigningKey[];
  plan: TokenPlan;
  /** The nonce of ID tokens for codes its authorize page did not issue (those carry their request's nonce). */
  nonce?: string;
  /** The `sub` its UserInfo answers, when not the ID token's. */
  userinfoSub?: string;
  /** The `iss` its authorize page sends back (RFC 9207), when not its own issuer. */
  callbackIss?: string;
  /** What its UserInfo adds to the `sub`. */
  userinfoClaims: Record<string, unknown>;
  /** Fields its discovery document says instead of its own (an endpoint elsewhere); an answer instead of the document, when set. */
  discovery: Record<string, unknown>;
  discoveryAnswer?: (res: ServerResponse) => void;
  /** A fresh plan (a new random sub), no recorded requests, the default nonce and UserInfo. */
  reset(): void;
}

/**
 * An OpenID provider: discovery (announcing RFC 9207's iss parameter), a
 * JWKS, an authorize page that approves at once and adds `iss`, a token
 * endpoint that checks the client's Basic credentials and, for codes it
 * issued, the PKCE verifier, and answers with an ID token made from `plan`.
 */
export async function startFakeOidc(): Promise<FakeOidc> {
  const fake = { published: [await newSigningKey()], userinfoClaims: {}, client: OIDC_CLIENT } as unknown as FakeOidc;

  async function idToken(code: string | null): Promise<string> {
    const { plan } = fake;
    const key = plan.key ?? fake.published[0]!;
    const nonce = fake.authorizationOf(code)?.get("nonce") ?? fake.nonce;
    const jwt = new SignJWT({ nonce, ...plan.claims })
      .setProtectedHeader({ alg: "ES256", kid: key.kid })
      .setIssuer(plan.iss ?? fake.origin)
      .setAudience(plan.aud ?? fake.client.clientId)
      .setIssuedAt();
    if (plan.exp !== null) jwt.setExpirationTime(plan.exp ?? "5m");
    return jwt.sign(key.privateKey);
  }

  const provider = await startFakeProvider(
    {
      "GET /.well-known/openid-configuration": (_req, res) =>
        fake.discoveryAnswer?.(res) ?? sendJsonBody(res, 200, {
          issuer: fake.origin,
          authorization_endpoint: `${fake.origin}/authorize`,
          token_endpoint: `${fake.origin}/token`,
          jwks_uri: `${fake.origin}/jwks`,
          userinfo_endpoint: `${fake.origin}/userinfo`,
          response_types_supported: ["code"],
          code_challenge_methods_supported: ["S256"],
          authorization_response_iss_parameter_supported: true,
          ...fake.discovery,
        }),
      "GET /jwks": (_req, res) => sendJsonBody(res, 200, { keys: fake.published.map((k) => k.jwk) }),
      "GET /userinfo": (req, res) =>
        req.headers.authorization === `Bearer ${OIDC_ACCESS_TOKEN}`
          ? sendJsonBody(res, 200, { ...fake.userinfoClaims, sub: fake.userinfoSub ?? fake.plan.claims.sub })
          : sendJsonBody(res, 401, { error: "invalid_token" }),
      "POST /token": async (req, res, body) => {
        const form = new URLSearchParams(body);
        const [id, secret] = decodeBasic(req.headers.authorization) ?? [];
        if (id !== fake.client.clientId || secret !== fake.client.clientSecret) return sendJsonBody(res, 401, { error: "invalid_client" });
        const code = form.get("code");
        const authorization = fake.authorizationOf(code);
        if (code !== OIDC_CODE && !pkceHolds(authorization, form.get("code_verifier"))) return sendJsonBody(res, 400, { error: "invalid_grant" });
        sendJsonBody(res, 200, { access_token: OIDC_ACCESS_TOKEN, token_type: "Bearer", expires_in: 300, id_token: await idToken(code) });
      },
    },
    { iss: () => fake.callbackIss ?? fake.origin },
  );
  Object.assign(fake, provider);
  fake.reset = () => {
    fake.requests.length = 0;
    fake.authorizations.length = 0;
    fake.nonce = undefined;
    fake.userinfoSub = undefined;
    fake.callbackIss = undefined;
    fake.discovery = {};
    fake.discoveryAnswer = undefined;
    fake.userinfoClaims = { picture: "https://idp.example/olive.png", name: "Userinfo Name" };
    fake.plan = { claims: { sub: `sub-${randomBytes(4).toString("hex")}`, email: "oidc@example.com", email_verified: true, name: "Olive OIDC" } };
  };
  fake.reset();
  return fake;
}
