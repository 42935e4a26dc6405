import assert from "node:assert/strict";
import { decodeJwt, decodeProtectedHeader } from "jose";
import type { RunningServer } from "../../src/app/server.js";
import { browse, CookieJar, pkcePair, signIn } from "../support/browserless.js";
import { consoleSignIn } from "../support/consoleSignIn.js";
import { call, getJson, isActive, passwordTokens, refresh, TOKEN_PATH } from "../support/oauth.js";
import { basicAuth, postForm, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

/**
 * Issue 25, item 4: discovery lists exactly what the service supports. Each
 * advertised value is used here with a request that must succeed, and a key
 * nobody checks fails the first test, so the document cannot grow a claim
 * the code does not keep.
 */
describe("discovery lists exactly what is supported: each advertised feature answers a request", () => {
  const APP = { ...TEST_APP, refreshExpireInHours: 24 };
  const JWT_APP = { ...APP, name: "casdoor-style", clientId: "client-casdoor", tokenFormat: "JWT" };
  const USER = { ...TEST_USER, emailVerified: true };
  let server: RunningServer;
  let doc: Record<string, any>;
  const basic = { authorization: basicAuth(APP.clientId, APP.clientSecret) };
  const redirectUri = APP.redirectUris[0]!;

  before(async () => {
    server = await startTestServer({ config: { applications: [APP, JWT_APP], users: [USER] } });
    const res = await getJson(`${server.url}/.well-known/openid-configuration`);
    assert.equal(res.status, 200);
    doc = res.body;
  });
  after(() => server.close());

  /**
   * Keys another change checks (request objects, response modes: test/e2e/oidcConformance.spec.ts; assertion
   * algorithms: test/e2e/clientAssertion.spec.ts; back-channel logout: test/e2e/backchannelLogout.spec.ts).
   */
  const CHECKED_ELSEWHERE = [
    "acr_values_supported", "request_parameter_supported", "request_uri_parameter_supported", "response_modes_supported",
    "token_endpoint_auth_signing_alg_values_supported", "introspection_endpoint_auth_signing_alg_values_supported",
    "revocation_endpoint_auth_signing_alg_values_supported", "device_authorization_endpoint",
    // PAR and request objects: test/e2e/pushedAuthorization.spec.ts.
    "pushed_authorization_request_endpoint", "require_pushed_authorization_requests", "request_object_signing_alg_values_supported",
    // DPoP proofs of every algorithm listed: test/oauth/dpop.spec.ts; bound tokens: test/e2e/dpop.spec.ts.
    "dpop_signing_alg_values_supported",
    "backchannel_logout_supported", "backchannel_logout_session_supported",
  ];
  /** JWT client authentication, which test/e2e/clientAssertion.spec.ts proves at every endpoint with openid-client. */
  const JWT_METHODS = ["client_secret_jwt", "private_key_jwt"];
  const CHECKED_HERE = [
    "issuer", "authorization_endpoint", "token_endpoint", "introspection_endpoint", "userinfo_endpoint", "revocation_endpoint",
    "end_session_endpoint", "jwks_uri", "response_types_supported", "grant_types_supported", "subject_types_supported",
    "id_token_signing_alg_values_supported", "scopes_supported", "claims_supported", "claims_parameter_supported",
    "token_endpoint_auth_methods_supported", "introspection_endpoint_auth_methods_supported",
    "revocation_endpoint_auth_methods_supported", "code_challenge_methods_supported", "authorization_response_iss_parameter_supported",
  ];

  it("has no key that a test here or elsewhere does not check", () => {
    assert.deepEqual(Object.keys(doc).sort(), [...CHECKED_HERE, ...CHECKED_ELSEWHERE].sort());
    assert.equal(doc.issuer, server.issuer);
  });

  async function code(params: Record<string, string> = {}): Promise<string> {
    const { location } = await signIn(server, params);
    const value = location.searchParams.get("code");
    assert.ok(value, location.href);
    return value;
  }
  const exchange = (fields: Record<string, string>, headers: Record<string, string> = basic) =>
    postForm(doc.token_endpoint, { grant_type: "authorization_code", redirect_uri: redirectUri, ...fields }, headers);

  it("serves every endpoint it names, userinfo by GET and POST", async () => {
    for (const key of ["token_endpoint", "introspection_endpoint", "userinfo_endpoint", "revocation_endpoint", "end_session_endpoint", "jwks_uri", "authorization_endpoint"]) {
      assert.ok(doc[key].startsWith(`${server.issuer}/`), key);
    }
    const url = (key: string) => doc[key].replace(server.issuer, server.url);
    const tokens = await passwordTokens(server, { client: APP, scope: "openid profile" });
    assert.equal((await getJson(url("userinfo_endpoint"), { authorization: `Bearer ${tokens.access_token}` })).status, 200);
    assert.equal((await postForm(url("userinfo_endpoint"), { access_token: tokens.access_token })).status, 200);
    assert.equal((await postForm(url("introspection_endpoint"), { token: tokens.access_token }, basic)).body.active, true);
    assert.equal((await postForm(url("revocation_endpoint"), { token: tokens.access_token }, basic)).status, 200);
    assert.ok((await getJson(url("jwks_uri"))).body.keys.length > 0);
    assert.equal((await browse(url("end_session_endpoint"), new CookieJar())).status < 500, true);
    assert.equal((await browse(`${url("authorization_endpoint")}?client_id=${APP.clientId}&redirect_uri=${redirectUri}&response_type=code&state=s`, new CookieJar())).status, 200);
  });

  it("issues tokens by every grant type it lists", async () => {
    const seen = new Set<string>();
    for (const grant of doc.grant_types_supported as string[]) {
      if (grant === "authorization_code") {
        assert.equal((await exchange({ code: await code() })).status, 200);
      } else if (grant === "implicit") {
        const { location } = await signIn(server, { response_type: "token" });
        assert.ok(new URLSearchParams(location.hash.slice(1)).get("access_token"));
      } else if (grant === "password") {
        await passwordTokens(server, { client: APP });
      } else if (grant === "client_credentials") {
        assert.equal((await postForm(`${server.url}${TOKEN_PATH}`, { grant_type: grant }, basic)).status, 200);
      } else if (grant === "refresh_token") {
        const res = await refresh(server, (await passwordTokens(server, { client: APP })).refresh_token!, {}, APP);
        assert.equal(res.status, 200, JSON.stringify(res.body));
      } else if (grant === "urn:ietf:params:oauth:grant-type:device_code" || grant === "urn:ietf:params:oauth:grant-type:token-exchange") {
        // Known, and off until an application lists it; the whole flows: test/e2e/deviceAuthorization.spec.ts, test/e2e/tokenExchange.spec.ts.
        const res = await postForm(`${server.url}${TOKEN_PATH}`, { grant_type: grant, device_code: "x" }, basic);
        assert.equal(res.body.error, "unauthorized_client");
      } else if (grant === "urn:ietf:params:oauth:grant-type:jwt-bearer") {
        // Known, and refusing what no trustedIssuers entry vouches for; the whole flow: test/e2e/jwtBearer.spec.ts.
        const res = await postForm(`${server.url}${TOKEN_PATH}`, { grant_type: grant, assertion: "x.y.z" });
        assert.equal(res.body.error, "invalid_grant");
      } else {
        assert.fail(`no request for grant type ${grant}`);
      }
      seen.add(grant);
    }
    assert.deepEqual([...seen].sort(), ["authorization_code", "client_credentials", "implicit", "password", "refresh_token", "urn:ietf:params:oauth:grant-type:device_code",
      "urn:ietf:params:oauth:grant-type:jwt-bearer", "urn:ietf:params:oauth:grant-type:token-exchange"]);
  });

  it("answers every response type it lists with what the type names", async () => {
    for (const type of doc.response_types_supported as string[]) {
      const { location } = await signIn(server, { response_type: type, nonce: "n-1" });
      const params = type === "code" ? location.searchParams : new URLSearchParams(location.hash.slice(1));
      for (const part of type.split(" ")) {
        const name = part === "token" ? "access_token" : part;
        assert.ok(params.get(name), `${type}: ${name} in ${location.href}`);
      }
    }
  });

  it("grants every scope it lists", async () => {
    for (const scope of doc.scopes_supported as string[]) {
      const tokens = await passwordTokens(server, { client: APP, scope: scope === "openid" ? "openid" : `openid ${scope}` });
      assert.ok(tokens.scope.split(" ").includes(scope), scope);
    }
  });

  it("supplies every claim it lists, in an ID token, an access token or userinfo", async () => {
    const seen = new Set<string>();
    const add = (claims: Record<string, unknown>) => Object.keys(claims).forEach((c) => seen.add(c));
    const all = (doc.scopes_supported as string[]).join(" ");
    for (const app of [APP, JWT_APP]) {
      const headers = { authorization: basicAuth(app.clientId, app.clientSecret) };
      const tokens = (await exchange({ code: await code({ client_id: app.clientId, scope: all, nonce: "n-2" }) }, headers)).body;
      add(decodeJwt(tokens.id_token));
      add(decodeJwt(tokens.access_token));
      add((await getJson(doc.userinfo_endpoint.replace(server.issuer, server.url), { authorization: `Bearer ${tokens.access_token}` })).body);
    }
    const missing = (doc.claims_supported as string[]).filter((c) => !seen.has(c));
    assert.deepEqual(missing, []);
  });

  it("honours the claims parameter (claims_parameter_supported)", async () => {
    assert.equal(doc.claims_parameter_supported, true);
    const claims = JSON.stringify({ id_token: { email: null }, userinfo: { phone_number: null } });
    const tokens = (await exchange({ code: await code({ scope: "openid", claims }) })).body;
    assert.equal(decodeJwt(tokens.id_token).email, USER.email);
    const info = await getJson(`${server.url}/api/userinfo`, { authorization: `Bearer ${tokens.access_token}` });
    assert.equal(info.body.phone_number, USER.phone);
  });

  it("authenticates clients at the token endpoint by every method it lists", async () => {
    assert.deepEqual(doc.token_endpoint_auth_methods_supported, ["client_secret_basic", "client_secret_post", ...JWT_METHODS, "none"]);
    assert.equal((await exchange({ code: await code() }, basic)).status, 200);
    assert.equal((await exchange({ code: await code(), client_id: APP.clientId, client_secret: APP.clientSecret }, {})).status, 200);
    // none: a public client proves itself with PKCE alone.
    const { verifier, challenge } = pkcePair();
    const res = await exchange({ code: await code({ code_challenge: challenge, code_challenge_method: "S256" }), client_id: APP.clientId, code_verifier: verifier }, {});
    assert.equal(res.status, 200, JSON.stringify(res.body));
  });

  it("authenticates at introspection and revocation by every method it lists", async () => {
    const methods = { introspection_endpoint: ["client_secret_basic", "client_secret_post", ...JWT_METHODS], revocation_endpoint: ["client_secret_basic", "client_secret_post", ...JWT_METHODS, "none"] };
    for (const [key, listed] of Object.entries(methods)) {
      assert.deepEqual(doc[`${key}_auth_methods_supported`], listed);
      const url = doc[key].replace(server.issuer, server.url);
      const token = (await passwordTokens(server, { client: APP })).access_token;
      assert.equal((await postForm(url, { token }, basic)).status, 200, `${key} basic`);
      assert.equal((await postForm(url, { token, client_id: APP.clientId, client_secret: APP.clientSecret })).status, 200, `${key} post`);
    }
    // none: the public client (the console's application) revokes its own token with its client_id alone.
    const revocation = doc.revocation_endpoint.replace(server.issuer, server.url);
    const consoleToken = (await consoleSignIn(server, USER)).access_token;
    assert.equal((await postForm(revocation, { token: consoleToken, client_id: server.domain.console.clientId })).status, 200, "revocation none");
    assert.equal(await isActive(server, consoleToken), false);
  });

  it("accepts every PKCE method it lists and signs with every alg it lists", async () => {
    assert.deepEqual(doc.code_challenge_methods_supported, ["S256"]);
    const { verifier, challenge } = pkcePair();
    const tokens = (await exchange({ code: await code({ code_challenge: challenge, code_challenge_method: "S256" }), code_verifier: verifier })).body;
    // Each is an application's signingAlg away: its first key is made by its first token (signingAlgs.spec.ts signs with each).
    assert.deepEqual(doc.id_token_signing_alg_values_supported, ["RS256", "PS256", "ES256", "EdDSA"]);
    assert.equal(decodeProtectedHeader(tokens.id_token).alg, "RS256");
  });

  it("gives a user one public sub for every client, and puts iss in authorization responses", async () => {
    assert.deepEqual(doc.subject_types_supported, ["public"]);
    const subs = [];
    for (const app of [APP, JWT_APP]) {
      const tokens = await passwordTokens(server, { client: app });
      subs.push(decodeJwt(tokens.id_token!).sub);
    }
    assert.equal(subs[0], subs[1]);
    assert.equal(doc.authorization_response_iss_parameter_supported, true);
    const { location } = await signIn(server);
    assert.equal(location.searchParams.get("iss"), server.issuer);
  });

  it("answers a call the document does not list as unsupported", async () => {
    const res = await call(`${server.url}${TOKEN_PATH}`, {
      method: "POST", headers: { "content-type": "application/x-www-form-urlencoded", ...basic }, body: "grant_type=urn:ietf:params:oauth:grant-type:saml2-bearer",
    });
    assert.equal(res.body.error, "unsupported_grant_type");
  });
});
