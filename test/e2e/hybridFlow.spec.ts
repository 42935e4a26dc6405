import assert from "node:assert/strict";
import { decodeJwt, decodeProtectedHeader } from "jose";
import * as oauth from "oauth4webapi";
import * as oidc from "openid-client";
import type { RunningServer } from "../../src/app/server.js";
import { idTokenHash } from "../../src/oauth/tokens.js";
import { authorizeUrl, browse, CookieJar } from "../support/browserless.js";
import { discover, locationOf, signInAt } from "../support/highAssurance.js";
import { CODE_ONLY_APP, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

const CALLBACK = TEST_APP.redirectUris[0]!;
const unescapeHtml = (value: string) => value.replace(/&#(\d+);/g, (_, code: string) => String.fromCharCode(Number(code)));

/**
 * Issue 45 §4 and §5: the hybrid flow (OIDC Core §3.3), `code id_token`,
 * `code token` and `code id_token token`, with c_hash, at_hash and s_hash;
 * and access tokens by RFC 9068 for a user who signed in, checked by
 * openid-client and oauth4webapi unchanged.
 */
describe("the hybrid flow and RFC 9068 access tokens", () => {
  let server: RunningServer;
  const ES_APP = { ...TEST_APP, name: "hybrid-es", clientId: "client-hybrid-es", signingAlg: "ES256" };
  const CODE_ONLY = { ...CODE_ONLY_APP, redirectUris: [CALLBACK] };

  before(async () => {
    server = await startTestServer({ config: { applications: [TEST_APP, ES_APP, CODE_ONLY], users: [TEST_USER] } });
  });
  after(() => server.close());

  async function hybridRequest(responseType: string, extra: Record<string, string> = {}, clientId = TEST_APP.clientId) {
    const verifier = oidc.randomPKCECodeVerifier();
    const params = {
      client_id: clientId, redirect_uri: CALLBACK, response_type: responseType, scope: "openid profile", state: oidc.randomState(),
      nonce: oidc.randomNonce(), code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: "S256", ...extra,
    };
    return { params, verifier };
  }

  it("lists the hybrid types in discovery", async () => {
    const meta = (await discover(server, TEST_APP.clientId, oidc.ClientSecretBasic(TEST_APP.clientSecret))).serverMetadata();
    for (const type of ["code id_token", "code token", "code id_token token"]) assert.ok(meta.response_types_supported?.includes(type), type);
  });

  for (const [app, alg] of [[TEST_APP, "RS256"], [ES_APP, "ES256"]] as const) {
    it(`completes openid-client's useCodeIdTokenResponseType flow from the fragment (${alg}): c_hash and s_hash hold`, async () => {
      const signedWith = { id_token_signed_response_alg: alg };
      const config = await discover(server, app.clientId, oidc.ClientSecretBasic(app.clientSecret), signedWith);
      oidc.useCodeIdTokenResponseType(config);
      const { params, verifier } = await hybridRequest("code id_token", {}, app.clientId);
      const location = locationOf(await signInAt(oidc.buildAuthorizationUrl(config, params)));
      assert.equal(location.search, "", "the fragment is the default: nothing in the query");
      const frontIdToken = new URLSearchParams(location.hash.slice(1)).get("id_token")!;
      assert.equal(decodeProtectedHeader(frontIdToken).alg, alg);
      const front = decodeJwt(frontIdToken);
      assert.equal(front.s_hash, idTokenHash(params.state, alg));
      const tokens = await oidc.authorizationCodeGrant(config, location, { expectedNonce: params.nonce, expectedState: params.state, pkceCodeVerifier: verifier });
      assert.equal(tokens.claims()?.sub, front.sub);
      assert.equal(tokens.claims()?.nonce, params.nonce);
    });
  }

  it("answers code id_token token with the code, the access token and an ID token binding both (at_hash, c_hash)", async () => {
    const { params } = await hybridRequest("code id_token token");
    const fragment = new URLSearchParams(locationOf(await signInAt(authorizeUrl(server.url, params))).hash.slice(1));
    const [code, accessToken, idToken] = ["code", "access_token", "id_token"].map((name) => fragment.get(name)!);
    assert.ok(code && accessToken && idToken);
    assert.equal(fragment.get("token_type"), "Bearer");
    assert.equal(fragment.get("refresh_token"), null, "never a refresh token from the authorization endpoint");
    const claims = decodeJwt(idToken);
    assert.equal(claims.c_hash, idTokenHash(code, "RS256"));
    assert.equal(claims.at_hash, idTokenHash(accessToken, "RS256"));
    assert.equal(claims.s_hash, idTokenHash(params.state, "RS256"));
    assert.equal(claims.nonce, params.nonce);
  });

  it("answers code token with the code and the access token, and no ID token from the front channel", async () => {
    const { params } = await hybridRequest("code token");
    const fragment = new URLSearchParams(locationOf(await signInAt(authorizeUrl(server.url, params))).hash.slice(1));
    assert.ok(fragment.get("code") && fragment.get("access_token"));
    assert.equal(fragment.get("id_token"), null);
  });

  it("posts the hybrid response with response_mode=form_post, which openid-client takes as a POSTed Request", async () => {
    const config = await discover(server, TEST_APP.clientId, oidc.ClientSecretBasic(TEST_APP.clientSecret));
    oidc.useCodeIdTokenResponseType(config);
    const { params, verifier } = await hybridRequest("code id_token", { response_mode: "form_post" });
    const page = await signInAt(oidc.buildAuthorizationUrl(config, params));
    assert.equal(page.status, 200);
    const html = await page.text();
    const fields = new URLSearchParams([...html.matchAll(/<input type="hidden" name="([^"]*)" value="([^"]*)">/g)].map(([, n, v]): [string, string] => [unescapeHtml(n!), unescapeHtml(v!)]));
    assert.ok(fields.get("code") && fields.get("id_token"));
    const posted = new Request(CALLBACK, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: fields.toString() });
    const tokens = await oidc.authorizationCodeGrant(config, posted, { expectedNonce: params.nonce, expectedState: params.state, pkceCodeVerifier: verifier });
    assert.ok(tokens.access_token);
  });

  it("refuses the hybrid types to an application without the implicit grant, and without a nonce", async () => {
    const noImplicit = locationOf(await browse(authorizeUrl(server.url, (await hybridRequest("code id_token", {}, CODE_ONLY.clientId)).params), new CookieJar()));
    assert.equal(new URLSearchParams(noImplicit.hash.slice(1)).get("error"), "unauthorized_client");
    const { params } = await hybridRequest("code id_token");
    const noNonce = locationOf(await browse(authorizeUrl(server.url, { ...params, nonce: undefined }), new CookieJar()));
    assert.equal(new URLSearchParams(noNonce.hash.slice(1)).get("error"), "invalid_request");
    const inQuery = locationOf(await browse(authorizeUrl(server.url, { ...params, response_mode: "query" }), new CookieJar()));
    assert.equal(new URLSearchParams(inQuery.hash.slice(1)).get("error"), "invalid_request", "tokens never go in the query");
  });

  it("issues RFC 9068 access tokens that oauth4webapi's validateJwtAccessToken accepts, with how the user signed in", async () => {
    const issuer = new URL(server.issuer);
    const loopback = { [oauth.allowInsecureRequests]: true } as const;
    const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: "oidc", ...loopback }));
    const config = await discover(server, TEST_APP.clientId, oidc.ClientSecretBasic(TEST_APP.clientSecret));
    const { params, verifier } = await hybridRequest("code");
    const location = locationOf(await signInAt(oidc.buildAuthorizationUrl(config, params)));
    const tokens = await oidc.authorizationCodeGrant(config, location, { expectedNonce: params.nonce, expectedState: params.state, pkceCodeVerifier: verifier });
    assert.equal(decodeProtectedHeader(tokens.access_token).typ, "at+jwt");
    const request = new Request("https://resource.example/", { headers: { authorization: `Bearer ${tokens.access_token}` } });
    const claims = await oauth.validateJwtAccessToken(as, request, TEST_APP.clientId, loopback);
    for (const claim of ["iss", "exp", "aud", "sub", "client_id", "iat", "jti", "scope", "auth_time", "acr", "amr"]) assert.ok(claims[claim] !== undefined, claim);
    assert.equal(claims.client_id, TEST_APP.clientId);
    assert.equal(claims.scope, "openid profile");
    assert.deepEqual(claims.amr, ["pwd"]);
    assert.equal(claims.auth_time, tokens.claims()?.auth_time);
  });
});
