import assert from "node:assert/strict";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import * as oidc from "openid-client";
import { PushedAuthorizationService } from "../../gen/identity/v1/authorize_pb.js";
import type { RunningServer } from "../../src/app/server.js";
import { authorizeUrl, browse, CookieJar } from "../support/browserless.js";
import { clientKey, discover, locationOf, REQUEST_OBJECT_KEY_ALGS, signInAt, type ClientKey, type RequestObjectAlg } from "../support/highAssurance.js";
import { basicAuth, postForm, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

const PAR_PATH = "/api/oauth/par";
const CALLBACK = TEST_APP.redirectUris[0]!;

/**
 * Issue 45 §1 and §2: pushed authorization requests (RFC 9126) and signed
 * request objects (RFC 9101), driven by openid-client unchanged:
 * buildAuthorizationUrlWithPAR and buildAuthorizationUrlWithJAR, then the
 * sign-in and the code exchange. Attacks: test/hardening/pushedRequestAttacks.spec.ts.
 */
describe("pushed authorization requests and request objects (RFC 9126, RFC 9101)", () => {
  let server: RunningServer;
  let keys: Record<RequestObjectAlg, ClientKey>;
  const JAR_APP = {
    name: "jar", clientId: "client-jar", redirectUris: [CALLBACK], grantTypes: ["authorization_code"], tokenEndpointAuthMethod: "private_key_jwt",
  };
  const PAR_ONLY_APP = { ...TEST_APP, name: "par-only", clientId: "client-par-only", requirePushedAuthorizationRequests: true };

  before(async () => {
    keys = Object.fromEntries(await Promise.all(REQUEST_OBJECT_KEY_ALGS.map(async (alg) => [alg, await clientKey(alg)]))) as Record<RequestObjectAlg, ClientKey>;
    const jwks = { keys: REQUEST_OBJECT_KEY_ALGS.map((alg) => keys[alg].publicJwk) };
    server = await startTestServer({ config: { applications: [TEST_APP, { ...JAR_APP, jwks }, PAR_ONLY_APP], users: [TEST_USER] } });
  });
  after(() => server.close());

  const secretClient = (app: { clientId: string; clientSecret: string } = TEST_APP) => discover(server, app.clientId, oidc.ClientSecretBasic(app.clientSecret));
  const keyClient = (key: ClientKey) => discover(server, JAR_APP.clientId, oidc.PrivateKeyJwt({ key: key.privateKey, kid: key.kid }));

  /** Sign in at `url`, then exchange the code with openid-client's own checks (state, iss, PKCE, ID token). */
  async function signInAndExchange(config: oidc.Configuration, url: URL, checks: { state: string; verifier: string; nonce?: string }) {
    const location = locationOf(await signInAt(url));
    return oidc.authorizationCodeGrant(config, location, { expectedState: checks.state, pkceCodeVerifier: checks.verifier, expectedNonce: checks.nonce });
  }

  async function codeFlowParams() {
    const verifier = oidc.randomPKCECodeVerifier();
    const params = {
      redirect_uri: CALLBACK, response_type: "code", scope: "openid profile", state: oidc.randomState(), nonce: oidc.randomNonce(),
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: "S256",
    };
    return { params, checks: { state: params.state, verifier, nonce: params.nonce } };
  }

  it("is advertised in discovery: the endpoint, request objects and their algorithms, not required by default", async () => {
    const meta = (await secretClient()).serverMetadata();
    assert.equal(meta.pushed_authorization_request_endpoint, `${server.issuer}${PAR_PATH}`);
    assert.equal(meta.require_pushed_authorization_requests, false);
    assert.equal(meta.request_parameter_supported, true);
    assert.equal(meta.request_uri_parameter_supported, false, "a request_uri is only ever a pushed request's");
    assert.deepEqual(meta.request_object_signing_alg_values_supported, ["RS256", "PS256", "ES256", "EdDSA"]);
  });

  it("signs in through openid-client's buildAuthorizationUrlWithPAR: the browser carries only client_id and request_uri", async () => {
    const config = await secretClient();
    const { params, checks } = await codeFlowParams();
    const url = await oidc.buildAuthorizationUrlWithPAR(config, params);
    assert.deepEqual([...url.searchParams.keys()].sort(), ["client_id", "request_uri"]);
    assert.match(url.searchParams.get("request_uri")!, /^urn:ietf:params:oauth:request_uri:[A-Za-z0-9_-]{43}$/);
    const tokens = await signInAndExchange(config, url, checks);
    assert.equal(tokens.claims()?.nonce, checks.nonce);
    assert.equal(tokens.scope, "openid profile");
  });

  it("answers 201 with a request_uri that expires in 60 seconds, over REST and over RPC", async () => {
    const rest = await postForm(`${server.url}${PAR_PATH}`, { response_type: "code", redirect_uri: CALLBACK, scope: "openid", state: "s" }, {
      authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret),
    });
    assert.equal(rest.status, 201, rest.text);
    assert.equal(rest.body.expires_in, 60);
    assert.equal(rest.headers.get("cache-control"), "no-store");
    const rpc = createClient(PushedAuthorizationService, createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" }));
    const answer = await rpc.pushAuthorizationRequest(
      { clientId: TEST_APP.clientId, clientSecret: TEST_APP.clientSecret, responseType: "code", redirectUri: CALLBACK, scope: "openid", state: "from-rpc" },
    );
    assert.equal(answer.expiresIn, 60n);
    const location = locationOf(await signInAt(authorizeUrl(server.url, { request_uri: answer.requestUri, redirect_uri: undefined, response_type: undefined, scope: undefined, state: undefined })));
    assert.equal(location.searchParams.get("state"), "from-rpc");
    assert.ok(location.searchParams.get("code"));
  });

  it("checks what is pushed as the authorize endpoint would, and answers the client, not the user", async () => {
    const auth = { authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret) };
    const cases: [Record<string, string>, Record<string, string>, number, string][] = [
      [{ response_type: "code", redirect_uri: "https://evil.example/cb", state: "s" }, auth, 400, "invalid_request"],
      [{ response_type: "code", redirect_uri: CALLBACK }, auth, 400, "invalid_request"],
      [{ response_type: "code", redirect_uri: CALLBACK, state: "s", request_uri: "urn:ietf:params:oauth:request_uri:x" }, auth, 400, "invalid_request"],
      [{ response_type: "code", redirect_uri: CALLBACK, state: "s" }, { authorization: basicAuth(TEST_APP.clientId, "wrong-secret") }, 401, "invalid_client"],
      [{ response_type: "code", redirect_uri: CALLBACK, state: "s", client_id: TEST_APP.clientId }, {}, 401, "invalid_client"],
    ];
    for (const [fields, headers, status, error] of cases) {
      const res = await postForm(`${server.url}${PAR_PATH}`, fields, headers);
      assert.equal(res.status, status, `${JSON.stringify(fields)}: ${res.text}`);
      assert.equal(res.body.error, error, JSON.stringify(fields));
    }
  });

  for (const alg of REQUEST_OBJECT_KEY_ALGS) {
    it(`signs in through openid-client's buildAuthorizationUrlWithJAR, the request object signed with ${alg}`, async () => {
      const config = await keyClient(keys[alg]);
      const { params, checks } = await codeFlowParams();
      const url = await oidc.buildAuthorizationUrlWithJAR(config, params, { key: keys[alg].privateKey, kid: keys[alg].kid });
      assert.deepEqual([...url.searchParams.keys()].sort(), ["client_id", "request"]);
      const tokens = await signInAndExchange(config, url, checks);
      assert.equal(tokens.claims()?.nonce, checks.nonce);
    });
  }

  it("takes a request object at PAR too, authenticated by private_key_jwt", async () => {
    const config = await keyClient(keys.ES256);
    const { params, checks } = await codeFlowParams();
    const signed = await oidc.buildAuthorizationUrlWithJAR(config, params, { key: keys.ES256.privateKey, kid: keys.ES256.kid });
    const url = await oidc.buildAuthorizationUrlWithPAR(config, { request: signed.searchParams.get("request")! });
    assert.ok(url.searchParams.get("request_uri"));
    const tokens = await signInAndExchange(config, url, checks);
    assert.equal(tokens.claims()?.nonce, checks.nonce);
  });

  it("uses only the request object's parameters, never those beside it (RFC 9101 §6.3)", async () => {
    const config = await keyClient(keys.RS256);
    const { params } = await codeFlowParams();
    const signed = await oidc.buildAuthorizationUrlWithJAR(config, { ...params, state: "signed-state" }, { key: keys.RS256.privateKey, kid: keys.RS256.kid });
    signed.searchParams.set("state", "outer-state");
    signed.searchParams.set("scope", "openid email profile address");
    const location = locationOf(await signInAt(signed));
    assert.equal(location.searchParams.get("state"), "signed-state");
  });

  it("refuses a requirePushedAuthorizationRequests client's plain request, back at its redirect_uri, and serves its pushed one", async () => {
    const plain = await browse(authorizeUrl(server.url, { client_id: PAR_ONLY_APP.clientId }), new CookieJar());
    const refused = locationOf(plain);
    assert.equal(refused.searchParams.get("error"), "invalid_request");
    assert.match(refused.searchParams.get("error_description")!, /PAR/);
    const config = await secretClient(PAR_ONLY_APP);
    const { params, checks } = await codeFlowParams();
    assert.ok((await signInAndExchange(config, await oidc.buildAuthorizationUrlWithPAR(config, params), checks)).access_token);
  });

  it("requires PAR of every client under --require-pushed-authorization-requests, and says so in discovery", async () => {
    const strict = await startTestServer({ overrides: { requirePushedAuthorizationRequests: true } });
    try {
      const config = await discover(strict, TEST_APP.clientId, oidc.ClientSecretBasic(TEST_APP.clientSecret));
      assert.equal(config.serverMetadata().require_pushed_authorization_requests, true);
      assert.equal(locationOf(await browse(authorizeUrl(strict.url), new CookieJar())).searchParams.get("error"), "invalid_request");
      const { params, checks } = await codeFlowParams();
      const url = await oidc.buildAuthorizationUrlWithPAR(config, params);
      assert.ok((await signInAndExchange(config, url, checks)).access_token);
    } finally {
      await strict.close();
    }
  });
});
