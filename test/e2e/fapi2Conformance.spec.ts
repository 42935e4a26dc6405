import assert from "node:assert/strict";
import { generateKeyPairSync, randomUUID } from "node:crypto";
import { calculateJwkThumbprint, createLocalJWKSet, decodeJwt, decodeProtectedHeader, exportJWK, jwtVerify, SignJWT, type JWK } from "jose";
import * as oidc from "openid-client";
import type { RunningServer } from "../../src/app/server.js";
import { authorizeUrl, browse, CookieJar, pkcePair, submit } from "../support/browserless.js";
import { FakeClock } from "../support/clock.js";
import { dpopKey, dpopProof, type DPoPKey, type ProofClaims } from "../support/dpop.js";
import { clientKey, discover, locationOf, signInAt, type ClientKey } from "../support/highAssurance.js";
import { call, TOKEN_PATH, type HttpResult } from "../support/oauth.js";
import { postForm, startTestServer, TEST_USER } from "../support/server.js";

/**
 * The checks of the OpenID Foundation conformance suite's
 * "fapi2-security-profile-final-test-plan" (FAPI 2.0 Security Profile,
 * final) of an authorization server, for its variant private_key_jwt +
 * DPoP, unsigned requests through PAR, plain responses, openid and plain
 * OAuth, reproduced here: the suite needs Java and Docker. Each describe
 * names the suite's module; each test the behaviour it checks. What the
 * plan checks that this service does not offer (MTLS, JARM, TLS settings)
 * is listed in docs/high-assurance.md. Userinfo is the protected resource.
 */
const PAR_PATH = "/api/oauth/par";
const USERINFO_PATH = "/api/userinfo";
const ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
const CALLBACK = "http://127.0.0.1:9999/callback";
const FAPI_ALGS = ["PS256", "ES256", "EdDSA", "Ed25519"];
const FAPI_APP = { grantTypes: ["authorization_code", "refresh_token"], tokenEndpointAuthMethod: "private_key_jwt", profile: "fapi2", refreshExpireInHours: 24 };

/** An RSA DPoP key (PS256, the suite's default) whose KeyObject signs RS256 too, for the proofs §5.4 refuses. */
async function rsaDpopKey(): Promise<DPoPKey> {
  const pair = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const publicJwk = await exportJWK(pair.publicKey);
  return { keyPair: pair as unknown as DPoPKey["keyPair"], alg: "PS256", publicJwk, jkt: await calculateJwkThumbprint(publicJwk) };
}

interface FapiClient {
  clientId: string;
  key: ClientKey;
  redirectUri: string;
}

describe("OpenID FAPI 2.0 Security Profile conformance (fapi2-security-profile-final-test-plan)", function () {
  this.timeout(60_000);
  let server: RunningServer;
  let clock: FakeClock;
  let first: FapiClient;
  let second: FapiClient;
  let consenting: FapiClient;
  let rsaKey: ClientKey;

  before(async () => {
    // Set when the suite starts: openid-client checks iat against real time.
    clock = new FakeClock();
    const [k1, k2, k3, rsa] = await Promise.all([clientKey("ES256", "one"), clientKey("PS256", "two"), clientKey("Ed25519", "three"), clientKey("RS256", "rsa")]);
    rsaKey = rsa;
    first = { clientId: "fapi-one", key: k1, redirectUri: CALLBACK };
    second = { clientId: "fapi-two", key: k2, redirectUri: `${CALLBACK}2` };
    consenting = { clientId: "fapi-three", key: k3, redirectUri: CALLBACK };
    const app = (c: FapiClient, signingAlg: string, extra: Record<string, unknown> = {}) => ({
      ...FAPI_APP, name: c.clientId, clientId: c.clientId, signingAlg, redirectUris: [c.redirectUri, `${c.redirectUri}/other`],
      jwks: { keys: c === first ? [c.key.publicJwk, rsa.publicJwk] : [c.key.publicJwk] }, ...extra,
    });
    server = await startTestServer({
      clock,
      config: { applications: [app(first, "PS256"), app(second, "ES256"), app(consenting, "EdDSA", { consentRequired: true })], users: [TEST_USER] },
      // The refused assertions below would lock the clients out.
      overrides: { clientAuthMaxFailures: 10_000, clientAuthMaxFailuresPerIp: 10_000 },
    });
  });
  after(() => server?.close());

  const now = () => Math.floor(clock.now() / 1000);
  const url = (path: string) => `${server.issuer}${path}`;

  /** A private_key_jwt assertion (RFC 7523 §3) timed by the server's clock; `claims` override or drop (undefined) any claim. */
  function assertion(client: FapiClient, claims: Record<string, unknown> = {}, signer: ClientKey = client.key): Promise<string> {
    const payload: Record<string, unknown> = { iss: client.clientId, sub: client.clientId, aud: server.issuer, jti: randomUUID(), iat: now(), exp: now() + 60, ...claims };
    for (const [k, v] of Object.entries(payload)) if (v === undefined) delete payload[k];
    return new SignJWT(payload).setProtectedHeader({ alg: signer.alg === "Ed25519" ? "EdDSA" : signer.alg, kid: signer.kid }).sign(signer.privateKey);
  }

  const proof = (key: DPoPKey, path: string, claims: Partial<ProofClaims> = {}, header: Record<string, unknown> = {}) =>
    dpopProof(key, { htm: "POST", htu: url(path), iat: now(), ...claims }, header);

  interface PushOptions {
    client?: FapiClient;
    /** A DPoP proof for the push, or a key to make one with. */
    dpop?: DPoPKey | string;
    assertionClaims?: Record<string, unknown>;
    signer?: ClientKey;
    method?: string;
  }

  /** A push (RFC 9126 §2.1) as the suite makes it: code, PKCE S256, state, nonce, openid; `fields` change or drop (undefined) any. */
  async function push(fields: Record<string, string | undefined> = {}, options: PushOptions = {}): Promise<{ res: HttpResult; verifier: string }> {
    const client = options.client ?? first;
    const { verifier, challenge } = pkcePair();
    const all: Record<string, string | undefined> = {
      response_type: "code", redirect_uri: client.redirectUri, scope: "openid", state: randomUUID(), nonce: randomUUID(),
      code_challenge: challenge, code_challenge_method: "S256", ...fields,
      client_assertion_type: ASSERTION_TYPE, client_assertion: await assertion(client, options.assertionClaims, options.signer),
    };
    const body = new URLSearchParams(Object.entries(all).filter((e): e is [string, string] => e[1] !== undefined));
    const headers: Record<string, string> = { "content-type": "application/x-www-form-urlencoded" };
    if (options.dpop) headers.dpop = typeof options.dpop === "string" ? options.dpop : await proof(options.dpop, PAR_PATH);
    const res = await call(url(PAR_PATH), { method: options.method ?? "POST", headers, body: options.method === "GET" ? undefined : body.toString() });
    return { res, verifier };
  }

  /** The authorize URL with only client_id and request_uri (PAR §4, fapi2-security-profile-final-par-without-duplicate-parameters). */
  const usePushed = (requestUri: string, clientId = first.clientId) =>
    authorizeUrl(server.url, { client_id: clientId, request_uri: requestUri, redirect_uri: undefined, response_type: undefined, scope: undefined, state: undefined });

  /** Push, sign in, and read the redirect: the code's response parameters, and the PKCE verifier. */
  async function authorized(fields: Record<string, string | undefined> = {}, options: PushOptions = {}): Promise<{ params: URLSearchParams; location: URL; verifier: string }> {
    const { res, verifier } = await push(fields, options);
    assert.equal(res.status, 201, res.text);
    const location = locationOf(await signInAt(usePushed(res.body.request_uri, (options.client ?? first).clientId)));
    assert.equal(location.hash, "", "nothing in the fragment of a code response (RejectErrorInUrlFragment, RejectAuthCodeInUrlFragment)");
    return { params: location.searchParams, location, verifier };
  }

  /** Redeem a code with a DPoP proof of `key` (none when undefined); `fields` change or drop any parameter. */
  async function redeem(code: string, verifier: string, key: DPoPKey | undefined, fields: Record<string, string | undefined> = {}, client = first): Promise<HttpResult> {
    const all: Record<string, string | undefined> = {
      grant_type: "authorization_code", code, code_verifier: verifier, redirect_uri: client.redirectUri,
      client_assertion_type: ASSERTION_TYPE, client_assertion: await assertion(client), ...fields,
    };
    const params = Object.fromEntries(Object.entries(all).filter((e): e is [string, string] => e[1] !== undefined));
    return postForm(url(TOKEN_PATH), params, key ? { dpop: await proof(key, TOKEN_PATH) } : {});
  }

  /** A fresh DPoP-bound token set for the first client: the whole flow. */
  async function tokensFor(key: DPoPKey, fields: Record<string, string | undefined> = {}): Promise<HttpResult> {
    const { params, verifier } = await authorized(fields, { dpop: key });
    const res = await redeem(params.get("code")!, verifier, key);
    assert.equal(res.status, 200, res.text);
    return res;
  }

  /** GET userinfo with `Authorization: DPoP` and a proof of `key` (claims and headers bent as told). */
  async function userinfo(token: string, key: DPoPKey, bend: { claims?: Partial<ProofClaims>; header?: Record<string, unknown>; headers?: Record<string, string>; scheme?: string } = {}): Promise<HttpResult> {
    const dpop = await dpopProof(key, { htm: "GET", htu: url(USERINFO_PATH), iat: now(), accessToken: token, ...bend.claims }, bend.header);
    return call(url(USERINFO_PATH), { headers: { authorization: `${bend.scheme ?? "DPoP"} ${token}`, dpop, ...bend.headers } });
  }

  describe("fapi2-security-profile-final-discovery-end-point-verification", () => {
    it("publishes what a FAPI 2.0 authorization server with private_key_jwt and DPoP must", async () => {
      const doc = (await call(`${server.url}/.well-known/openid-configuration`)).body;
      assert.equal(doc.issuer, server.issuer);
      assert.ok((doc.response_types_supported as string[]).includes("code"));
      assert.equal(doc.authorization_response_iss_parameter_supported, true, "RFC 9207 §3, FAPI 2.0 §5.3.2.2");
      assert.equal(doc.pushed_authorization_request_endpoint, url(PAR_PATH));
      assert.equal(typeof doc.require_pushed_authorization_requests, "boolean");
      assert.ok((doc.token_endpoint_auth_methods_supported as string[]).includes("private_key_jwt"));
      assert.ok((doc.code_challenge_methods_supported as string[]).includes("S256"));
      for (const member of ["token_endpoint_auth_signing_alg_values_supported", "dpop_signing_alg_values_supported", "id_token_signing_alg_values_supported"]) {
        assert.ok((doc[member] as string[]).some((alg) => FAPI_ALGS.includes(alg)), `${member} names PS256, ES256 or EdDSA: ${doc[member]}`);
      }
      assert.equal(doc.userinfo_signing_alg_values_supported, undefined, "userinfo answers JSON only, so it lists no algorithms");
      for (const endpoint of ["authorization_endpoint", "token_endpoint", "jwks_uri"]) assert.ok(new URL(doc[endpoint]).href.startsWith(server.issuer));
    });

    it("publishes signing keys each with a kid, RSA of 2048 bits or more (FAPI2FinalEnsureMinimumServerKeyLength, OIDCC-10.1)", async () => {
      await tokensFor(await dpopKey());
      const { keys } = (await call(`${server.url}/.well-known/jwks`)).body as { keys: JWK[] };
      assert.ok(keys.some((k) => k.alg === "PS256"));
      for (const key of keys) {
        assert.ok(key.kid, "every key has a kid");
        if (key.kty === "RSA") assert.ok(Buffer.from(key.n!, "base64url").length * 8 >= 2048);
        if (key.kty === "EC") assert.ok(["P-256", "P-384", "P-521"].includes(key.crv!));
      }
    });
  });

  describe("fapi2-security-profile-final-happy-flow", () => {
    it("signs in through openid-client: PAR with a DPoP proof, the code exchanged with DPoP, a PS256 ID token, userinfo with the bound token", async () => {
      // openid-client's assertion has nbf = its now: the server's clock catches up with real time first (within the skew allowed).
      clock.advanceSeconds(Math.max(0, Date.now() - clock.now()) / 1000);
      const config = await discover(server, first.clientId, oidc.PrivateKeyJwt({ key: first.key.privateKey, kid: first.key.kid }), { id_token_signed_response_alg: "PS256" });
      const dpopKeys = await oidc.randomDPoPKeyPair("PS256");
      const DPoP = oidc.getDPoPHandle(config, dpopKeys);
      const checks = { pkceCodeVerifier: oidc.randomPKCECodeVerifier(), expectedState: oidc.randomState(), expectedNonce: oidc.randomNonce() };
      const authorizeAt = await oidc.buildAuthorizationUrlWithPAR(config, {
        redirect_uri: first.redirectUri, scope: "openid profile", state: checks.expectedState, nonce: checks.expectedNonce,
        code_challenge: await oidc.calculatePKCECodeChallenge(checks.pkceCodeVerifier), code_challenge_method: "S256",
      }, { DPoP });
      const landed = locationOf(await signInAt(authorizeAt));
      assert.equal(landed.searchParams.get("iss"), server.issuer, "RFC 9207: the response names its issuer (RequireIssInAuthorizationResponse)");
      assert.ok(landed.searchParams.get("code")!.length * 8 >= 128, "EnsureMinimumAuthorizationCodeLength");
      // openid-client checks iss, state, PKCE and the ID token (signature, iss, aud, exp, iat, nonce).
      const tokens = await oidc.authorizationCodeGrant(config, landed, checks, undefined, { DPoP });
      assert.equal(tokens.token_type, "dpop");
      assert.ok(tokens.expires_in! > 0);
      assert.ok(tokens.access_token.length * 8 >= 128, "EnsureMinimumAccessTokenLength");
      const header = decodeProtectedHeader(tokens.id_token!);
      assert.equal(header.alg, "PS256", "§5.4");
      assert.ok(header.kid, "EnsureIdTokenContainsKid");
      const jkt = await calculateJwkThumbprint(await exportJWK(dpopKeys.publicKey));
      assert.deepEqual(decodeJwt(tokens.access_token).cnf, { jkt });
      const claims = await oidc.fetchUserInfo(config, tokens.access_token, tokens.claims()!.sub, { DPoP });
      assert.equal(claims.preferred_username, TEST_USER.name);
    });

    it("answers a push with 201, JSON, a request_uri of ample entropy and its expires_in (PAR §2.2)", async () => {
      const { res } = await push();
      assert.equal(res.status, 201);
      assert.match(res.headers.get("content-type")!, /^application\/json/);
      assert.match(res.body.request_uri, /^urn:ietf:params:oauth:request_uri:[A-Za-z0-9_-]{43}$/, "EnsureMinimumRequestUriEntropy");
      assert.ok(res.body.expires_in >= 5 && res.body.expires_in < 365 * 86400, "CheckForPARResponseExpiresIn");
    });

    it("answers the authorize request with code, state and iss in the query, and no more", async () => {
      const { params } = await authorized({ state: "st-1" });
      assert.deepEqual([...params.keys()].sort(), ["code", "iss", "state"]);
      assert.equal(params.get("state"), "st-1");
      assert.equal(params.get("iss"), server.issuer);
    });

    it("second client: dpop_jkt in the push, with no DPoP header, binds the code; a 43-character nonce comes back intact", async () => {
      const key = await dpopKey("ES256");
      const nonce = "n".repeat(43);
      const { params, verifier } = await authorized({ dpop_jkt: key.jkt, nonce }, { client: second });
      const foreign = await redeem(params.get("code")!, verifier, await dpopKey(), {}, second);
      assert.equal(foreign.body.error, "invalid_grant");
      const res = await redeem(params.get("code")!, verifier, key, {}, second);
      assert.equal(res.status, 200, res.text);
      assert.equal(res.headers.get("cache-control"), "no-store");
      const id = decodeJwt(res.body.id_token);
      assert.equal(id.nonce, nonce);
      assert.equal(decodeProtectedHeader(res.body.id_token).alg, "ES256");
      assert.deepEqual(decodeJwt(res.body.access_token).cnf, { jkt: key.jkt });
    });

    it("serves the protected resource with a Date header, and never for a token in the query (DisallowAccessTokenInQuery)", async () => {
      const key = await dpopKey();
      const token = (await tokensFor(key)).body.access_token;
      const ok = await userinfo(token, key);
      assert.equal(ok.status, 200, ok.text);
      assert.ok(Math.abs(Date.parse(ok.headers.get("date")!) - Date.now()) < 5 * 60_000, "CheckForDateHeaderInResourceResponse");
      for (const name of ["access_token", "accessToken"]) {
        const queried = await call(`${url(USERINFO_PATH)}?${name}=${token}`, { headers: { dpop: await dpopProof(key, { htm: "GET", htu: url(USERINFO_PATH), iat: now() }) } });
        assert.ok([400, 401].includes(queried.status), `${name}: ${queried.status}`);
      }
      const accepting = await userinfo(token, key, { headers: { accept: "application/json; charset=utf-8" } });
      assert.equal(accepting.status, 200, "RFC 7231 §5.3.2: other Accept headers");
    });

    it("puts in the ID token no claim the request did not ask for, beyond OIDC's own (EnsureIdTokenDoesNotContainNonRequestedClaims)", async () => {
      const id = decodeJwt((await tokensFor(await dpopKey())).body.id_token);
      const own = ["iss", "sub", "aud", "exp", "iat", "auth_time", "nonce", "acr", "amr", "azp", "sid", "at_hash", "c_hash", "s_hash", "jti", "nbf"];
      assert.deepEqual(Object.keys(id).filter((claim) => !own.includes(claim)), []);
    });
  });

  describe("authorization request variations (ensure-authorization-request-without-state/nonce-success, long state/nonce, other scope order)", () => {
    it("succeeds without state, and returns none", async () => {
      const { params } = await authorized({ state: undefined });
      assert.ok(params.get("code"));
      assert.equal(params.get("state"), null);
    });

    it("succeeds without nonce (response_type=code), and the ID token carries none", async () => {
      const key = await dpopKey();
      const { params, verifier } = await authorized({ nonce: undefined }, { dpop: key });
      const tokens = await redeem(params.get("code")!, verifier, key);
      assert.equal(decodeJwt(tokens.body.id_token).nonce, undefined);
    });

    it("returns a 64-character nonce, a 384-character nonce and a 1000-character state intact", async () => {
      for (const nonce of ["a".repeat(64), "b".repeat(384)]) assert.equal(decodeJwt((await tokensFor(await dpopKey(), { nonce })).body.id_token).nonce, nonce);
      const state = "s".repeat(1000);
      assert.equal((await authorized({ state })).params.get("state"), state);
    });

    it("accepts the scopes in another order (RFC 6749 §3.3)", async () => {
      const tokens = await tokensFor(await dpopKey(), { scope: "profile openid" });
      assert.deepEqual(tokens.body.scope.split(" ").sort(), ["openid", "profile"]);
    });
  });

  describe("fapi2-security-profile-final-user-rejects-authentication", () => {
    it("sends access_denied to the redirect_uri with the 128-character state and iss when the user denies", async () => {
      const state = "r".repeat(128);
      const { res } = await push({ state }, { client: consenting });
      const jar = new CookieJar();
      const consentPage = await signInAt(usePushed(res.body.request_uri, consenting.clientId), jar);
      assert.equal(consentPage.status, 200, "the consent page");
      const hidden = Object.fromEntries([...(await consentPage.text()).matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map(([, n, v]) => [n!, v!]));
      const location = locationOf(await submit(`${server.url}/login/oauth/consent`, { ...hidden, decision: "deny" }, jar));
      assert.equal(`${location.origin}${location.pathname}`, consenting.redirectUri);
      assert.deepEqual(Object.fromEntries(location.searchParams), { error: "access_denied", error_description: "the user denied the request", state, iss: server.issuer });
    });
  });

  describe("refused authorization requests", () => {
    it("refuses response_type=code id_token and token at PAR (ensure-response-type-code-idtoken-fails, ensure-response-type-token-fails)", async () => {
      for (const responseType of ["code id_token", "token"]) {
        const { res } = await push({ response_type: responseType });
        assert.ok(res.status >= 400 && res.status < 500, `${responseType}: ${res.status}`);
        assert.ok(["unsupported_response_type", "invalid_request", "unauthorized_client"].includes(res.body.error), res.text);
      }
    });

    it("refuses an unregistered redirect_uri at PAR with invalid_request, so no one is sent there (ensure-registered-redirect-uri)", async () => {
      const { res } = await push({ redirect_uri: `${CALLBACK}/unregistered-${randomUUID()}` });
      assert.equal(res.status, 400);
      assert.equal(res.body.error, "invalid_request");
    });

    it("refuses a push without redirect_uri when two are registered (ensure-redirect-uri-in-authorization-request)", async () => {
      const { res } = await push({ redirect_uri: undefined });
      assert.equal(res.status, 400);
      assert.equal(res.body.error, "invalid_request");
    });

    it("sends an authorize request that did not come through PAR back as invalid_request with its state (ensure-unsigned-authorization-request-without-using-par-fails)", async () => {
      const { challenge } = pkcePair();
      const location = locationOf(await browse(authorizeUrl(server.url, { client_id: first.clientId, redirect_uri: CALLBACK, code_challenge: challenge, code_challenge_method: "S256", state: "plain" }), new CookieJar()));
      assert.equal(location.searchParams.get("error"), "invalid_request");
      assert.equal(location.searchParams.get("state"), "plain");
      assert.equal(location.searchParams.get("code"), null);
    });

    it("refuses a push without PKCE or with plain PKCE (par-ensure-pkce-required, par-plain-pkce-rejected)", async () => {
      for (const pkce of [{ code_challenge: undefined, code_challenge_method: undefined }, { code_challenge: "a".repeat(43), code_challenge_method: "plain" }]) {
        const { res } = await push(pkce);
        assert.equal(res.status, 400);
        assert.equal(res.body.error, "invalid_request");
      }
    });

    it("refuses a request_uri inside a push (PAR §2.1: par-authorization-request-containing-request_uri-form-param)", async () => {
      const { res } = await push({ request_uri: `urn:ietf:params:oauth:request_uri:${randomUUID()}` });
      assert.equal(res.status, 400);
      assert.equal(res.body.error, "invalid_request");
    });

    it("answers a push with another HTTP method with an error (par-attempt-invalid-http-method)", async () => {
      for (const method of ["PUT", "GET"]) {
        const { res } = await push({}, { method });
        assert.ok(res.status >= 400 && res.status < 600, `${method}: ${res.status}`);
      }
    });
  });

  describe("request_uri (par-attempt-reuse-request_uri, -to-use-request_uri-for-different-client, -to-use-expired-request_uri)", () => {
    /** The answer to an authorize request with a request_uri that must fail: an error page, never a code. */
    async function refused(res: Response): Promise<void> {
      if (res.status === 303) {
        const error = new URL(res.headers.get("location")!).searchParams.get("error");
        assert.ok(["invalid_request", "invalid_request_object", "invalid_request_uri"].includes(error!), String(error));
        return;
      }
      assert.equal(res.status, 400);
      assert.match(await res.text(), /invalid_request_uri/);
    }

    it("takes a request_uri once", async () => {
      const { res } = await push();
      assert.ok(locationOf(await signInAt(usePushed(res.body.request_uri))).searchParams.get("code"));
      await refused(await browse(usePushed(res.body.request_uri), new CookieJar()));
    });

    it("refuses one client's request_uri named by another client", async () => {
      const { res } = await push();
      await refused(await browse(usePushed(res.body.request_uri, second.clientId), new CookieJar()));
    });

    it("refuses a request_uri past its expires_in", async () => {
      const { res } = await push();
      clock.advanceSeconds(res.body.expires_in + 1);
      await refused(await browse(usePushed(res.body.request_uri), new CookieJar()));
    });

    it("spends the request_uri at the first visit, before sign-in: the suite warns (§5.3.2.2 Note 3, par-ensure-reused-request-uri-prior-to-auth-completion-succeeds)", async () => {
      const { res } = await push();
      assert.equal((await browse(usePushed(res.body.request_uri), new CookieJar())).status, 200, "the login form");
      await refused(await browse(usePushed(res.body.request_uri), new CookieJar()));
    });
  });

  describe("the token endpoint", () => {
    it("refuses a code exchange without DPoP as invalid_dpop_proof (ensure-holder-of-key-required)", async () => {
      const { params, verifier } = await authorized();
      const res = await redeem(params.get("code")!, verifier, undefined);
      assert.equal(res.status, 400);
      assert.ok(["invalid_request", "invalid_grant", "invalid_dpop_proof"].includes(res.body.error));
    });

    it("refuses a code redeemed by another client (ensure-authorization-code-is-bound-to-client)", async () => {
      const key = await dpopKey();
      const { params, verifier } = await authorized({}, { dpop: key });
      const res = await redeem(params.get("code")!, verifier, key, { redirect_uri: CALLBACK, client_assertion: await assertion(second) }, second);
      assert.equal(res.status, 400);
      assert.equal(res.body.error, "invalid_grant");
    });

    it("refuses the second client's client_id with an assertion signed by the first's key (ensure-client-id-in-token-endpoint)", async () => {
      const key = await dpopKey();
      const { params, verifier } = await authorized({}, { dpop: key });
      const res = await redeem(params.get("code")!, verifier, key, { client_id: second.clientId, client_assertion: await assertion(second, {}, first.key) });
      assert.ok([400, 401].includes(res.status));
      assert.ok(["invalid_client", "invalid_grant"].includes(res.body.error));
    });

    it("refuses a code used twice, and revokes the tokens of its first use (attempt-reuse-authorization-code-after-one-second)", async () => {
      const key = await dpopKey();
      const { params, verifier } = await authorized({}, { dpop: key });
      const tokens = await redeem(params.get("code")!, verifier, key);
      assert.equal(tokens.status, 200);
      clock.advanceSeconds(1);
      const again = await redeem(params.get("code")!, verifier, key);
      assert.equal(again.status, 400);
      assert.equal(again.body.error, "invalid_grant");
      assert.equal((await userinfo(tokens.body.access_token, key)).status, 401, "RFC 6749 §4.1.2: should revoke");
    });

    it("refuses a code_verifier left out or wrong (ensure-pkce-code-verifier-required, incorrect-pkce-code-verifier-rejected)", async () => {
      const key = await dpopKey();
      const { params } = await authorized({}, { dpop: key });
      for (const verifier of [undefined, pkcePair().verifier]) {
        const res = await redeem(params.get("code")!, "", key, { code_verifier: verifier });
        assert.equal(res.body.error, "invalid_grant", res.text);
      }
    });

    it("refuses a code after 60 seconds (ensure-token-endpoint-fails-with-expired-auth-code)", async () => {
      const key = await dpopKey();
      const { params, verifier } = await authorized({}, { dpop: key });
      clock.advanceSeconds(61);
      const res = await redeem(params.get("code")!, verifier, key);
      assert.equal(res.body.error, "invalid_grant");
    });
  });

  describe("DPoP binding of the code (RFC 9449 §10)", () => {
    it("refuses a push whose dpop_jkt is not its proof's key (ensure-mismatched-dpop-jkt-fails)", async () => {
      const { res } = await push({ dpop_jkt: (await dpopKey()).jkt }, { dpop: await dpopKey() });
      assert.equal(res.status, 400);
      assert.equal(res.body.error, "invalid_dpop_proof");
    });

    it("refuses a code exchanged with another key than the push's proof, or than its dpop_jkt (token-endpoint-fails-with-mismatched-dpop-proof-jkt, -dpop-jkt)", async () => {
      for (const options of [{ dpop: await dpopKey() }, {}]) {
        const bound = await dpopKey();
        const { params, verifier } = await authorized(options.dpop ? {} : { dpop_jkt: bound.jkt }, options);
        const res = await redeem(params.get("code")!, verifier, await dpopKey());
        assert.equal(res.body.error, "invalid_grant", res.text);
      }
    });

    it("refuses a DPoP proof in RS256 from a fapi2 client at PAR and at the token endpoint (§5.4)", async () => {
      const key = await rsaDpopKey();
      const rs256 = { ...key, alg: "RS256" };
      const pushed = await push({}, { dpop: await proof(rs256, PAR_PATH) });
      assert.equal(pushed.res.body.error, "invalid_dpop_proof", pushed.res.text);
      const { params, verifier } = await authorized({}, { dpop: key });
      const res = await postForm(url(TOKEN_PATH), {
        grant_type: "authorization_code", code: params.get("code")!, code_verifier: verifier, redirect_uri: CALLBACK, client_assertion_type: ASSERTION_TYPE, client_assertion: await assertion(first),
      }, { dpop: await proof(rs256, TOKEN_PATH) });
      assert.equal(res.body.error, "invalid_dpop_proof", res.text);
      assert.equal((await redeem(params.get("code")!, verifier, key)).status, 200, "the code was not spent");
    });

    it("takes proofs with iat 10 seconds behind or ahead, and with nbf and exp, at PAR, the token endpoint and the resource (dpopproof-with-iat-10seconds-before/after-succeeds, check-dpop-proof-nbf-exp)", async () => {
      for (const skew of [-10, 10, 0]) {
        const key = await dpopKey();
        const extra = skew === 0 ? { nbf: now(), exp: now() + 300 } : {};
        const at = (path: string) => proof(key, path, { iat: now() + skew, ...extra });
        const pushed = await push({}, { dpop: await at(PAR_PATH) });
        assert.equal(pushed.res.status, 201, pushed.res.text);
        const code = locationOf(await signInAt(usePushed(pushed.res.body.request_uri))).searchParams.get("code")!;
        const tokens = await postForm(url(TOKEN_PATH), {
          grant_type: "authorization_code", code, code_verifier: pushed.verifier, redirect_uri: CALLBACK, client_assertion_type: ASSERTION_TYPE, client_assertion: await assertion(first),
        }, { dpop: await at(TOKEN_PATH) });
        assert.equal(tokens.status, 200, tokens.text);
        assert.equal((await userinfo(tokens.body.access_token, key, { claims: { iat: now() + skew, ...extra } })).status, 200);
      }
    });
  });

  describe("client authentication by private_key_jwt", () => {
    const pushWith = (claims: Record<string, unknown>, signer?: ClientKey) => push({}, { assertionClaims: claims, signer }).then((p) => p.res);
    const refusedAs = (res: HttpResult, errors = ["invalid_client"]) => {
      assert.ok([400, 401].includes(res.status), `${res.status} ${res.text}`);
      assert.ok(errors.includes(res.body.error), res.text);
    };

    it("refuses an assertion signed with RS256 (ensure-signed-client-assertion-with-RS256-fails)", async () => {
      refusedAs(await pushWith({}, rsaKey));
    });

    it("refuses a code exchange without an assertion (ensure-client-assertion-in-token-endpoint)", async () => {
      const key = await dpopKey();
      const { params, verifier } = await authorized({}, { dpop: key });
      refusedAs(await redeem(params.get("code")!, verifier, key, { client_assertion: undefined, client_assertion_type: undefined, client_id: first.clientId }), ["invalid_client", "invalid_request"]);
    });

    it("refuses an assertion that expired 5 minutes ago, names another server, or lacks sub (…-exp-is-5-minutes-in-past-fails, …-wrong-aud-fails, …-no-sub-fails)", async () => {
      refusedAs(await pushWith({ iat: now() - 360, exp: now() - 300 }));
      refusedAs(await pushWith({ aud: "https://other.example.com" }));
      refusedAs(await pushWith({ sub: undefined }));
    });

    it("refuses an assertion whose iat, nbf and exp are over 60 seconds ahead (par-ensure-jwt-client-assertions-nbf-over-60-seconds-in-the-future-fails)", async () => {
      refusedAs(await pushWith({ iat: now() + 70, nbf: now() + 70, exp: now() + 130 }), ["invalid_client", "invalid_request"]);
    });

    it("takes an assertion whose iat and nbf are 8 seconds ahead (par-ensure-jwt-client-assertions-nbf-8-seconds-in-the-future-is-accepted)", async () => {
      assert.equal((await pushWith({ iat: now() + 8, nbf: now() + 8, exp: now() + 68 })).status, 201);
    });

    it("takes an assertion once, even in the leeway past its exp", async () => {
      const used = await assertion(first, { exp: now() + 5 });
      const pushOnce = async () => (await call(url(PAR_PATH), {
        method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ response_type: "code", redirect_uri: CALLBACK, scope: "openid", code_challenge: pkcePair().challenge, code_challenge_method: "S256", client_assertion_type: ASSERTION_TYPE, client_assertion: used }).toString(),
      })).status;
      assert.equal(await pushOnce(), 201);
      clock.advanceSeconds(8);
      assert.equal(await pushOnce(), 401, "a replay 3 seconds after exp");
    });

    it("takes only the issuer, as a string, as aud: never the PAR or token endpoint's URL, nor an array (FAPI 2.0 §5.3.2.1, par-test-…-as-audience-fails)", async () => {
      assert.equal((await pushWith({ aud: server.issuer })).status, 201);
      for (const aud of [url(PAR_PATH), url(TOKEN_PATH), [server.issuer, "https://other.example.com"], [server.issuer]]) {
        refusedAs(await pushWith({ aud }), ["invalid_client", "invalid_request"]);
      }
      const key = await dpopKey();
      const { params, verifier } = await authorized({}, { dpop: key });
      refusedAs(await redeem(params.get("code")!, verifier, key, { client_assertion: await assertion(first, { aud: url(TOKEN_PATH) }) }));
    });
  });

  describe("fapi2-security-profile-final-dpop-negative-tests (userinfo as the resource)", () => {
    let key: DPoPKey;
    let token: string;
    before(async () => {
      // The suite's default DPoP key is PS256's: an RSA key, so its RS256 case runs too.
      key = await rsaDpopKey();
      token = (await tokensFor(key)).body.access_token;
    });

    it("takes the scheme in any case and the header in capitals (RFC 9110 §11.1, access-token-type-header-case-sensitivity)", async () => {
      assert.equal((await userinfo(token, key, { scheme: "dPoP" })).status, 200);
      const dpop = await dpopProof(key, { htm: "GET", htu: url(USERINFO_PATH), iat: now(), accessToken: token });
      assert.equal((await call(url(USERINFO_PATH), { headers: { Authorization: `DPoP ${token}`, DPOP: dpop } })).status, 200);
    });

    const bent: [string, (token: string) => Promise<RequestInit>][] = [
      ["two DPoP headers", async (t) => ({ headers: [["authorization", `DPoP ${t}`], ["dpop", await get(t)], ["dpop", await get(t)]] })],
      ["a proof that is not a JWT", async (t) => ({ headers: { authorization: `DPoP ${t}`, dpop: (await get(t)).split(".").slice(0, 2).join(".") } })],
      ["no typ", (t) => headersWith(t, {}, { typ: undefined })],
      ["typ other than dpop+jwt", (t) => headersWith(t, {}, { typ: "jwt" })],
      ["no jwk", (t) => headersWith(t, {}, { jwk: undefined })],
      ["a private key in jwk", async (t) => headersWith(t, {}, { jwk: await exportJWK(key.keyPair.privateKey) })],
      ["no jti", (t) => headersWith(t, { jti: undefined })],
      ["no htm", (t) => headersWith(t, { htm: undefined })],
      ["no htu", (t) => headersWith(t, { htu: undefined })],
      ["no iat", (t) => headersWith(t, { iat: undefined })],
      ["no ath", (t) => headersWith(t, { ath: undefined })],
      ["a wrong ath", (t) => headersWith(t, { ath: "x".repeat(43) })],
      ["htm PUT", (t) => headersWith(t, { htm: "PUT" })],
      ["htu of another URL", (t) => headersWith(t, { htu: url("/api/get-account") })],
      ["iat an hour ahead", (t) => headersWith(t, { iat: now() + 3600 })],
      ["iat an hour behind", (t) => headersWith(t, { iat: now() - 3600 })],
      ["alg none", async (t) => ({ headers: { authorization: `DPoP ${t}`, dpop: unsigned(await get(t)) } })],
      ["an invalid signature", async (t) => ({ headers: { authorization: `DPoP ${t}`, dpop: `${(await get(t)).slice(0, -4)}AAAA` } })],
      ["RS256, which §5.4 refuses", (t) => headersWith(t, {}, { alg: "RS256" })],
      ["a key other than the bound one", async (t) => ({ headers: { authorization: `DPoP ${t}`, dpop: await dpopProof(await dpopKey(), { htm: "GET", htu: url(USERINFO_PATH), iat: now(), accessToken: t }) } })],
      ["no proof", async (t) => ({ headers: { authorization: `DPoP ${t}` } })],
      ["no proof, the token as Bearer", async (t) => ({ headers: { authorization: `Bearer ${t}` } })],
    ];
    async function get(t: string, claims: Partial<ProofClaims> = {}, header: Record<string, unknown> = {}): Promise<string> {
      const { alg, ...rest } = header;
      const signer = alg ? { ...key, alg: alg as string } : key;
      return dpopProof(signer, { htm: "GET", htu: url(USERINFO_PATH), iat: now(), accessToken: t, ...claims }, rest);
    }
    async function headersWith(t: string, claims: Partial<ProofClaims>, header: Record<string, unknown> = {}): Promise<RequestInit> {
      return { headers: { authorization: `DPoP ${t}`, dpop: await get(t, claims, header) } };
    }
    const unsigned = (jwt: string) => {
      const [h, p] = jwt.split(".");
      const header = { ...JSON.parse(Buffer.from(h!, "base64url").toString()), alg: "none" };
      return `${Buffer.from(JSON.stringify(header)).toString("base64url")}.${p}.`;
    };
    for (const [what, init] of bent) {
      it(`refuses a proof with ${what}`, async () => {
        const res = await call(url(USERINFO_PATH), await init(token));
        assert.ok([400, 401].includes(res.status), `${res.status} ${res.text}`);
      });
    }

    it("takes a proof's jti once, and ignores extra claims and header members", async () => {
      const jti = randomUUID();
      assert.equal((await userinfo(token, key, { claims: { jti } })).status, 200);
      assert.equal((await userinfo(token, key, { claims: { jti } })).status, 401, "DPoP reuse: the second use of a jti");
      assert.equal((await userinfo(token, key, { claims: { extra: "claim" }, header: { extra: "header" } })).status, 200);
    });

    it("ignores a query or fragment in htu, compares scheme and host without case and a default port away", async () => {
      const target = new URL(url(USERINFO_PATH));
      const upper = `${target.protocol.toUpperCase()}//${target.host.toUpperCase()}${target.pathname}`;
      for (const htu of [`${target.href}?a=b#c`, upper]) assert.equal((await userinfo(token, key, { claims: { htu } })).status, 200, htu);
      const withQuery = await dpopProof(key, { htm: "GET", htu: target.href, iat: now(), accessToken: token });
      assert.equal((await call(`${target.href}?ui_locales=en`, { headers: { authorization: `DPoP ${token}`, dpop: withQuery } })).status, 200);
    });

    it("still takes a correct proof after all of them", async () => {
      assert.equal((await userinfo(token, key)).status, 200);
    });
  });

  describe("fapi2-security-profile-final-refresh-token", () => {
    const refresh = async (refreshToken: string, key: DPoPKey | undefined, client = first, withAssertion = true) =>
      postForm(url(TOKEN_PATH), {
        grant_type: "refresh_token", refresh_token: refreshToken, scope: "openid",
        ...(withAssertion ? { client_assertion_type: ASSERTION_TYPE, client_assertion: await assertion(client) } : { client_id: client.clientId }),
      }, key ? { dpop: await proof(key, TOKEN_PATH) } : {});

    it("refreshes with a new DPoP key (a confidential client's refresh token is not bound, RFC 9449 §5), as DPoP, not cacheable", async () => {
      const first_ = await tokensFor(await dpopKey("PS256"), { scope: "openid offline_access" });
      assert.ok(first_.body.refresh_token);
      clock.advanceSeconds(1);
      const key = await dpopKey("ES256");
      const res = await refresh(first_.body.refresh_token, key);
      assert.equal(res.status, 200, res.text);
      assert.equal(res.headers.get("cache-control"), "no-store");
      assert.equal(res.body.token_type, "DPoP");
      assert.notEqual(res.body.access_token, first_.body.access_token);
      assert.deepEqual(decodeJwt(res.body.access_token).cnf, { jkt: key.jkt });
      assert.equal(decodeJwt(res.body.id_token).sub, decodeJwt(first_.body.id_token).sub, "OIDC Core §12.2");
      const keys = createLocalJWKSet((await call(`${server.url}/.well-known/jwks`)).body);
      await jwtVerify(res.body.id_token, keys, { issuer: server.issuer, audience: first.clientId, currentDate: new Date(clock.now()) });
    });

    it("keeps the refresh token: it still works 30 seconds later, as a client that lost the answer retries (FAPI 2.0 §5.3.2.1)", async () => {
      const refreshToken = (await tokensFor(await dpopKey(), { scope: "openid offline_access" })).body.refresh_token;
      const once = await refresh(refreshToken, await dpopKey());
      assert.equal(once.status, 200, once.text);
      assert.ok(once.body.refresh_token === undefined || once.body.refresh_token === refreshToken, "no rotation");
      clock.advanceSeconds(30);
      const again = await refresh(refreshToken, await dpopKey());
      assert.equal(again.status, 200, again.text);
    });

    it("refuses a refresh without client authentication, without a DPoP proof, or with another client's refresh token", async () => {
      const refreshToken = (await tokensFor(await dpopKey(), { scope: "openid offline_access" })).body.refresh_token;
      const unauthenticated = await refresh(refreshToken, await dpopKey(), first, false);
      assert.ok([400, 401].includes(unauthenticated.status) && ["invalid_client", "invalid_grant", "invalid_request"].includes(unauthenticated.body.error), unauthenticated.text);
      const unproven = await refresh(refreshToken, undefined);
      assert.equal(unproven.status, 400);
      assert.ok(["invalid_request", "invalid_grant", "invalid_dpop_proof"].includes(unproven.body.error));
      const otherClient = await refresh(refreshToken, await dpopKey(), second);
      assert.equal(otherClient.body.error, "invalid_grant");
    });
  });
});
