import assert from "node:assert/strict";
import { ConnectError, Code } from "@connectrpc/connect";
import { decodeJwt } from "jose";
import * as oauth from "oauth4webapi";
import { IntrospectionService } from "../../gen/identity/v1/introspection_pb.js";
import { ApplicationAdminService } from "../../gen/identity/v1/admin_pb.js";
import type { RunningServer } from "../../src/app/server.js";
import { describeEachDatabase } from "../support/databases.js";
import { authorizeUrl, browse, CookieJar, pkcePair, signIn } from "../support/browserless.js";
import { dpopKey, dpopProof, type DPoPKey } from "../support/dpop.js";
import { assertOAuthError, call, TOKEN_PATH } from "../support/oauth.js";
import { connectClients } from "../support/rpc.js";
import { basicAuth, postForm, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

const CONFIDENTIAL = { ...TEST_APP, refreshExpireInHours: 24 };
/** A single-page app: a public client, whose refresh tokens DPoP binds too (RFC 9449 §5). */
const SPA = { name: "spa", clientId: "spa-client", publicClient: true, redirectUris: ["http://127.0.0.1:5173/callback"], refreshExpireInHours: 24 };
const OPAQUE = { name: "opaque", clientId: "opaque-client", clientSecret: "secret-of-the-opaque-client", grantTypes: ["password"], accessTokenStrategy: "opaque" };
const BOUND_ONLY = { name: "bound", clientId: "bound-client", clientSecret: "secret-of-the-bound-client", grantTypes: ["password", "client_credentials"], dpopBoundAccessTokens: true };
const loopback = { [oauth.allowInsecureRequests]: true } as const;

/**
 * DPoP (RFC 9449) driven by oauth4webapi, unchanged: its DPoP() handle signs
 * the proofs of the token request, the refresh and userinfo; the tokens come
 * back as token_type DPoP, bound by cnf.jkt, and work only with a proof of
 * that key (docs/dpop.md).
 */
describeEachDatabase("DPoP (RFC 9449) with oauth4webapi", (db) => {
  let server: RunningServer;
  let as: oauth.AuthorizationServer;
  let key: DPoPKey;
  const confidential: oauth.Client = { client_id: CONFIDENTIAL.clientId };
  const confidentialAuth = oauth.ClientSecretBasic(CONFIDENTIAL.clientSecret);

  before(async () => {
    server = await startTestServer({ database: db.url, config: { applications: [CONFIDENTIAL, SPA, OPAQUE, BOUND_ONLY], users: [TEST_USER] } });
    const issuer = new URL(server.issuer);
    as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: "oidc", ...loopback }));
    key = await dpopKey();
  });
  after(() => server?.close());

  async function passwordGrant(client: oauth.Client, auth: oauth.ClientAuth, dpop?: oauth.DPoPHandle): Promise<oauth.TokenEndpointResponse> {
    const params = { username: TEST_USER.name, password: TEST_USER.password, scope: "openid profile" };
    const response = await oauth.genericTokenEndpointRequest(as, client, auth, "password", params, { ...loopback, DPoP: dpop });
    return oauth.processGenericTokenEndpointResponse(as, client, response);
  }

  async function introspect(token: string): Promise<oauth.IntrospectionResponse> {
    return oauth.processIntrospectionResponse(as, confidential, await oauth.introspectionRequest(as, confidential, confidentialAuth, token, loopback));
  }

  it("lists the proof algorithms in discovery (RFC 9449 §5.1)", () => {
    const algs = as.dpop_signing_alg_values_supported;
    for (const alg of ["ES256", "RS256", "PS256", "EdDSA"]) assert.ok(algs?.includes(alg), `${alg} in ${algs}`);
    assert.ok(!algs?.some((alg) => alg === "none" || alg.startsWith("HS")), "never none or a MAC");
  });

  it("binds a token to the proof's key: token_type DPoP, cnf.jkt in the JWT and in introspection; userinfo takes it with a proof", async () => {
    const dpop = oauth.DPoP(confidential, key.keyPair);
    const tokens = await passwordGrant(confidential, confidentialAuth, dpop);
    assert.equal(tokens.token_type, "dpop");
    assert.deepEqual(decodeJwt(tokens.access_token).cnf, { jkt: key.jkt });
    const introspected = await introspect(tokens.access_token);
    assert.equal(introspected.active, true);
    assert.equal(introspected.token_type, "DPoP");
    assert.deepEqual(introspected.cnf, { jkt: key.jkt });

    const sub = oauth.getValidatedIdTokenClaims(tokens)!.sub;
    const response = await oauth.userInfoRequest(as, confidential, tokens.access_token, { ...loopback, DPoP: dpop });
    const claims = await oauth.processUserInfoResponse(as, confidential, sub, response);
    assert.equal(claims.preferred_username, TEST_USER.name);
  });

  it("leaves a request without a proof as it was: a Bearer token, without cnf", async () => {
    const tokens = await passwordGrant(confidential, confidentialAuth);
    assert.equal(tokens.token_type, "bearer");
    assert.equal(decodeJwt(tokens.access_token).cnf, undefined);
    const introspected = await introspect(tokens.access_token);
    assert.equal(introspected.token_type, "Bearer");
    assert.equal(introspected.cnf, undefined);
  });

  it("reports cnf.jkt for an opaque token too, from its row", async () => {
    const client: oauth.Client = { client_id: OPAQUE.clientId };
    const tokens = await passwordGrant(client, oauth.ClientSecretBasic(OPAQUE.clientSecret), oauth.DPoP(client, key.keyPair));
    assert.equal(tokens.access_token.split(".").length, 1, "opaque");
    const introspected = await introspect(tokens.access_token);
    assert.equal(introspected.token_type, "DPoP");
    assert.deepEqual(introspected.cnf, { jkt: key.jkt });
  });

  it("signs a public client in with dpop_jkt binding the code, and binds its refresh token: a refresh needs a proof of the same key", async () => {
    const client: oauth.Client = { client_id: SPA.clientId };
    const dpop = oauth.DPoP(client, key.keyPair);
    const { verifier, challenge } = pkcePair();
    const state = oauth.generateRandomState();
    const { location } = await signIn(server, {
      client_id: SPA.clientId, redirect_uri: SPA.redirectUris[0], scope: "openid profile", state,
      code_challenge: challenge, code_challenge_method: "S256", dpop_jkt: await dpop.calculateThumbprint(),
    });
    const params = oauth.validateAuthResponse(as, client, location, state);
    const codeResponse = await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, SPA.redirectUris[0]!, verifier, { ...loopback, DPoP: dpop });
    const tokens = await oauth.processAuthorizationCodeResponse(as, client, codeResponse);
    assert.equal(tokens.token_type, "dpop");

    // Another key's proof, or none, is refused, and the refresh token stays usable.
    const other = await dpopKey();
    for (const options of [{ DPoP: oauth.DPoP(client, other.keyPair) }, {}]) {
      const refused = await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, { ...loopback, ...options });
      await assert.rejects(oauth.processRefreshTokenResponse(as, client, refused), (err: unknown) => {
        assert.ok(err instanceof oauth.ResponseBodyError);
        assert.equal(err.error, "invalid_grant");
        return true;
      });
    }
    const refreshed = await oauth.processRefreshTokenResponse(
      as, client, await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, { ...loopback, DPoP: dpop }),
    );
    assert.equal(refreshed.token_type, "dpop");
    assert.deepEqual(decodeJwt(refreshed.access_token).cnf, { jkt: key.jkt });
    const response = await oauth.userInfoRequest(as, client, refreshed.access_token, { ...loopback, DPoP: dpop });
    assert.equal((await oauth.processUserInfoResponse(as, client, oauth.skipSubjectCheck, response)).preferred_username, TEST_USER.name);
  });

  it("leaves a confidential client's refresh token bound to its credentials: a refresh with another key's proof binds the new token to that key", async () => {
    const tokens = await passwordGrant(confidential, confidentialAuth, oauth.DPoP(confidential, key.keyPair));
    const other = await dpopKey();
    const response = await oauth.refreshTokenGrantRequest(as, confidential, confidentialAuth, tokens.refresh_token!, { ...loopback, DPoP: oauth.DPoP(confidential, other.keyPair) });
    const refreshed = await oauth.processRefreshTokenResponse(as, confidential, response);
    assert.deepEqual(decodeJwt(refreshed.access_token).cnf, { jkt: other.jkt });
  });

  it("refuses a code bound by dpop_jkt when the token request's proof is of another key, or missing", async () => {
    const client: oauth.Client = { client_id: SPA.clientId };
    const other = await dpopKey();
    for (const dpop of [oauth.DPoP(client, other.keyPair), undefined]) {
      const { verifier, challenge } = pkcePair();
      const state = oauth.generateRandomState();
      const { location } = await signIn(server, {
        client_id: SPA.clientId, redirect_uri: SPA.redirectUris[0], scope: "openid", state, code_challenge: challenge, code_challenge_method: "S256", dpop_jkt: key.jkt,
      });
      const params = oauth.validateAuthResponse(as, client, location, state);
      const response = await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, SPA.redirectUris[0]!, verifier, { ...loopback, DPoP: dpop });
      await assert.rejects(oauth.processAuthorizationCodeResponse(as, client, response), (err: unknown) => {
        assert.ok(err instanceof oauth.ResponseBodyError);
        assert.equal(err.error, "invalid_grant");
        assert.match(err.error_description ?? "", /dpop_jkt/);
        return true;
      });
    }
  });

  it("refuses a malformed dpop_jkt at authorize, back to the client", async () => {
    const res = await browse(authorizeUrl(server.url, { dpop_jkt: "not-a-thumbprint" }), new CookieJar());
    const location = new URL(res.headers.get("location") ?? "http://missing/");
    assert.equal(location.searchParams.get("error"), "invalid_request");
    assert.match(location.searchParams.get("error_description") ?? "", /dpop_jkt/);
  });

  it("refuses a token request without a proof for an application with dpopBoundAccessTokens", async () => {
    const res = await postForm(`${server.url}${TOKEN_PATH}`, { grant_type: "client_credentials" }, { authorization: basicAuth(BOUND_ONLY.clientId, BOUND_ONLY.clientSecret) });
    assertOAuthError(res, 400, "invalid_dpop_proof");
    const client: oauth.Client = { client_id: BOUND_ONLY.clientId };
    const tokens = await passwordGrant(client, oauth.ClientSecretBasic(BOUND_ONLY.clientSecret), oauth.DPoP(client, key.keyPair));
    assert.equal(tokens.token_type, "dpop");
  });

  it("takes get-account over REST with the DPoP scheme and a proof of its path", async () => {
    const tokens = await passwordGrant(confidential, confidentialAuth, oauth.DPoP(confidential, key.keyPair));
    const url = `${server.url}/api/get-account`;
    const proof = await dpopProof(key, { htm: "GET", htu: `${server.issuer}/api/get-account`, accessToken: tokens.access_token });
    const res = await call(url, { headers: { authorization: `DPoP ${tokens.access_token}`, dpop: proof } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.data.name, TEST_USER.name);
    const asBearer = await call(url, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    assert.equal(asBearer.status, 401);
    assert.match(asBearer.headers.get("www-authenticate") ?? "", /^DPoP .*error="invalid_token"/);
  });

  it("takes userinfo over Connect, gRPC-Web and gRPC with htm POST and htu <issuer>/identity.v1.IntrospectionService/GetUserInfo", async () => {
    const tokens = await passwordGrant(confidential, confidentialAuth, oauth.DPoP(confidential, key.keyPair));
    const htu = `${server.issuer}/identity.v1.IntrospectionService/GetUserInfo`;
    for (const [protocol, client] of Object.entries(connectClients(IntrospectionService, server.url))) {
      const proof = await dpopProof(key, { htm: "POST", htu, accessToken: tokens.access_token });
      const answer = await client.getUserInfo({}, { headers: { authorization: `DPoP ${tokens.access_token}`, dpop: proof } });
      assert.equal(answer.preferredUsername, TEST_USER.name, protocol);
      // The proof of the REST path does not do for the RPC.
      const restProof = await dpopProof(key, { htm: "GET", htu: `${server.issuer}/api/userinfo`, accessToken: tokens.access_token });
      await assert.rejects(client.getUserInfo({}, { headers: { authorization: `DPoP ${tokens.access_token}`, dpop: restProof } }), (err: unknown) => {
        assert.ok(err instanceof ConnectError, protocol);
        assert.equal(err.code, Code.Unauthenticated, protocol);
        assert.equal(err.metadata.get("x-oauth-error"), "invalid_dpop_proof", protocol);
        return true;
      });
    }
  });

  it("takes a DPoP-bound token at the admin RPCs with a proof, and refuses it as Bearer", async () => {
    const tokens = await passwordGrant(confidential, confidentialAuth, oauth.DPoP(confidential, key.keyPair));
    const { connect } = connectClients(ApplicationAdminService, server.url);
    const htu = `${server.issuer}/identity.v1.ApplicationAdminService/ListApplications`;
    const proof = await dpopProof(key, { htm: "POST", htu, accessToken: tokens.access_token });
    // The proof is accepted; alice is no administrator, which is what is left to say.
    await assert.rejects(connect.listApplications({}, { headers: { authorization: `DPoP ${tokens.access_token}`, dpop: proof } }), (err: unknown) => {
      assert.ok(err instanceof ConnectError);
      assert.equal(err.code, Code.PermissionDenied, err.message);
      return true;
    });
    await assert.rejects(connect.listApplications({}, { headers: { authorization: `Bearer ${tokens.access_token}` } }), (err: unknown) => {
      assert.ok(err instanceof ConnectError);
      assert.equal(err.code, Code.Unauthenticated);
      assert.match(err.metadata.get("www-authenticate") ?? "", /^DPoP /);
      return true;
    });
  });
});
