import assert from "node:assert/strict";
import { sha256 } from "../../src/oauth/secrets.js";
import type { RunningServer } from "../../src/app/server.js";
import { FakeClock } from "../support/clock.js";
import { assertOAuthError, call, postJson, TOKEN_PATH, tokenVerifier, type HttpResult } from "../support/oauth.js";
import { basicAuth, CC_ONLY_APP, CODE_ONLY_APP, postForm, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

const ACCESS_CLAIMS = ["aud", "azp", "client_id", "exp", "iat", "iss", "jti", "nbf", "scope", "sub"];
// A user's token also says how the user signed in (RFC 9068 §2.2.1; issue #46).
const USER_CLAIMS = [...ACCESS_CLAIMS, "name", "preferred_username", "auth_time", "acr", "amr"].sort();

describe("token endpoint over REST", () => {
  let server: RunningServer;
  let url: string;
  let verify: Awaited<ReturnType<typeof tokenVerifier>>;
  let aliceId: string;
  const clock = new FakeClock();

  before(async () => {
    server = await startTestServer({ clock, config: { applications: [TEST_APP, CC_ONLY_APP, CODE_ONLY_APP], users: [TEST_USER] } });
    url = server.url + TOKEN_PATH;
    verify = await tokenVerifier(server, TEST_APP.clientId);
    aliceId = (await server.domain.userAdmin.get(TEST_USER.name)).id;
  });
  after(() => server.close());

  const clientBody = { client_id: TEST_APP.clientId, client_secret: TEST_APP.clientSecret };
  const userBody = { grant_type: "password", username: TEST_USER.name, password: TEST_USER.password };
  const basic = { authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret) };

  /** A successful, uncacheable JSON token response. */
  function assertTokenResponse(res: HttpResult, fields: string[]): void {
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.match(res.headers.get("content-type") ?? "", /^application\/json/);
    assert.equal(res.headers.get("cache-control"), "no-store");
    assert.deepEqual(Object.keys(res.body).sort(), fields.sort());
    assert.equal(res.body.token_type, "Bearer");
    assert.equal(res.body.expires_in, 3600, "expires_in is seconds, as a JSON number");
  }

  async function assertClientToken(res: HttpResult): Promise<void> {
    assertTokenResponse(res, ["access_token", "token_type", "expires_in", "scope"]);
    assert.equal(res.body.scope, "openid", "no scope asked means openid");
    const claims = await verify(res.body.access_token, "at+jwt");
    assert.deepEqual(Object.keys(claims).sort(), ACCESS_CLAIMS);
    assert.equal(claims.sub, TEST_APP.clientId);
    assert.equal(claims.azp, TEST_APP.clientId);
    assert.equal(claims.client_id, TEST_APP.clientId);
    assert.equal(claims.scope, "openid");
    assert.equal(claims.iat, Math.floor(clock.now() / 1000));
    assert.equal(claims.nbf, claims.iat);
    assert.equal(claims.exp, claims.iat! + 3600);
    assert.match(String(claims.jti), /^[0-9a-f-]{36}$/);
  }

  async function assertUserTokens(res: HttpResult, scope = "openid"): Promise<Record<string, unknown>> {
    assertTokenResponse(res, ["access_token", "id_token", "refresh_token", "token_type", "expires_in", "scope"]);
    assert.equal(res.body.scope, scope);
    const claims = await verify(res.body.access_token, "at+jwt");
    assert.deepEqual(Object.keys(claims).sort(), USER_CLAIMS);
    assert.equal(claims.sub, aliceId, "sub is the user's stable id, not the name");
    assert.equal(claims.name, TEST_USER.displayName);
    assert.equal(claims.preferred_username, TEST_USER.name);
    assert.equal(claims.azp, TEST_APP.clientId);
    assert.equal(claims.scope, scope);
    assert.equal(claims.exp, claims.iat! + 3600);
    assert.equal(claims.nbf, claims.iat);

    assert.notEqual(res.body.id_token, res.body.access_token);
    const id = await verify(res.body.id_token, "JWT");
    assert.equal(id.sub, aliceId);
    assert.equal(id.azp, TEST_APP.clientId);
    assert.equal(id.auth_time, claims.iat);
    assert.equal(id.scope, undefined, "the ID token is not an access token");
    assert.match(res.body.refresh_token, /^[A-Za-z0-9_-]{43}$/);
    return id;
  }

  describe("client_credentials", () => {
    it("works with a form body and body credentials", async () => {
      await assertClientToken(await postForm(url, { grant_type: "client_credentials", ...clientBody }));
    });

    it("works with a form body and HTTP Basic", async () => {
      await assertClientToken(await postForm(url, { grant_type: "client_credentials" }, basic));
    });

    it("works with a JSON body (as the Casdoor SDKs send it)", async () => {
      await assertClientToken(await postJson(url, { grant_type: "client_credentials", ...clientBody }));
    });

    it("works with a JSON body and HTTP Basic", async () => {
      await assertClientToken(await postJson(url, { grant_type: "client_credentials" }, basic));
    });

    // Changed with issue 24: client_secret in the query string is refused (RFC 6749 §2.3.1), so the secret goes in Basic.
    it("works with query parameters and no body", async () => {
      const query = new URLSearchParams({ grant_type: "client_credentials", client_id: TEST_APP.clientId });
      await assertClientToken(await call(`${url}?${query}`, { method: "POST", headers: basic }));
    });

    it("accepts Basic and body credentials together when they agree", async () => {
      await assertClientToken(await postForm(url, { grant_type: "client_credentials", ...clientBody }, basic));
    });

    it("grants the scopes asked for, de-duplicated", async () => {
      const res = await postForm(url, { grant_type: "client_credentials", scope: "openid email openid", ...clientBody });
      assert.equal(res.status, 200);
      assert.equal(res.body.scope, "openid email");
      assert.equal((await verify(res.body.access_token, "at+jwt")).scope, "openid email");
    });

    it("gives expires_in in seconds from the application's expireInHours", async () => {
      const res = await postForm(url, { grant_type: "client_credentials" }, { authorization: basicAuth(CC_ONLY_APP.clientId, CC_ONLY_APP.clientSecret) });
      assert.equal(res.status, 200);
      assert.equal(res.body.expires_in, 7200);
    });
  });

  describe("password", () => {
    it("works with a form body and HTTP Basic", async () => {
      const id = await assertUserTokens(await postForm(url, userBody, basic));
      // at_hash: the access token issued beside it (OIDC Core §3.1.3.6).
      assert.deepEqual(Object.keys(id).sort(), ["acr", "amr", "at_hash", "aud", "auth_time", "azp", "exp", "iat", "iss", "sub"]);
    });

    it("works with a JSON body and body credentials, releasing scope claims in the ID token", async () => {
      const res = await postJson(url, { ...userBody, ...clientBody, scope: "openid profile email phone address" });
      const id = await assertUserTokens(res, "openid profile email phone address");
      assert.equal(id.name, TEST_USER.displayName);
      assert.equal(id.preferred_username, TEST_USER.name);
      assert.equal(id.picture, TEST_USER.avatar);
      assert.equal(id.email, TEST_USER.email);
      assert.equal(id.phone_number, TEST_USER.phone);
      assert.deepEqual(id.address, { formatted: TEST_USER.address });
    });

    // Changed with issue 24: password and client_secret in the query string are refused, so they go in the body.
    it("works with query parameters", async () => {
      const query = new URLSearchParams({ grant_type: "password", username: TEST_USER.name, client_id: TEST_APP.clientId });
      await assertUserTokens(await postForm(`${url}?${query}`, { password: TEST_USER.password, client_secret: TEST_APP.clientSecret }));
    });

    it("puts the access and refresh token in one family, a new one for each grant", async () => {
      const families = [];
      for (let i = 0; i < 2; i++) {
        const { body } = await postForm(url, userBody, basic);
        const access = await server.store.accessTokens.findByHash(sha256(body.access_token));
        const refresh = await server.store.refreshTokens.findByHash(sha256(body.refresh_token));
        assert.ok(access?.familyId, "revoking the refresh token's family must reach its access token");
        assert.equal(access.familyId, refresh?.familyId);
        families.push(access.familyId);
      }
      assert.notEqual(families[0], families[1]);
    });

    it("records every token so each is introspectable on its own", async () => {
      const a = await postForm(url, { grant_type: "client_credentials", ...clientBody });
      const b = await postForm(url, { grant_type: "client_credentials", ...clientBody });
      assert.notEqual(a.body.access_token, b.body.access_token);
      for (const token of [a.body.access_token, b.body.access_token]) {
        const row = await server.store.accessTokens.findByHash(sha256(token));
        assert.equal(row?.clientId, TEST_APP.clientId);
        assert.equal(row?.familyId, null, "no code or refresh token stands behind it: nothing revokes it with others");
      }
    });
  });

  describe("errors", () => {
    const cc = { grant_type: "client_credentials" };
    const form = (body: string, headers: Record<string, string> = {}) =>
      call(url, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded", ...headers }, body });

    it("wrong secret: 401 invalid_client with a Basic challenge", async () => {
      assertOAuthError(await postForm(url, { ...cc, client_id: TEST_APP.clientId, client_secret: "wrong" }), 401, "invalid_client");
      assertOAuthError(await postForm(url, cc, { authorization: basicAuth(TEST_APP.clientId, "wrong") }), 401, "invalid_client");
    });

    it("unknown client or no credentials: 401 invalid_client", async () => {
      assertOAuthError(await postForm(url, { ...cc, client_id: "nobody", client_secret: "x" }), 401, "invalid_client");
      assertOAuthError(await postForm(url, cc), 401, "invalid_client");
      assertOAuthError(await postForm(url, { ...cc, client_id: TEST_APP.clientId }), 401, "invalid_client");
    });

    it("malformed Basic credentials: 401 invalid_client", async () => {
      for (const header of ["Basic !!!notbase64", "Basic " + Buffer.from("no-colon").toString("base64"), "Basic " + Buffer.from("%zz:x").toString("base64")]) {
        assertOAuthError(await postForm(url, cc, { authorization: header }), 401, "invalid_client");
      }
      // The request's own mistakes are named first: credentials are looked at only for a grant we serve.
      const malformed = { authorization: "Basic !!!notbase64" };
      assertOAuthError(await postForm(url, {}, malformed), 400, "invalid_request");
      assertOAuthError(await postForm(url, { grant_type: "urn:example:nope" }, malformed), 400, "unsupported_grant_type");
    });

    it("Basic and body credentials that differ: invalid_request", async () => {
      assertOAuthError(await postForm(url, { ...cc, client_id: CC_ONLY_APP.clientId }, basic), 400, "invalid_request");
      assertOAuthError(await postForm(url, { ...cc, client_secret: "other" }, basic), 400, "invalid_request");
    });

    it("a grant the application has not enabled: unauthorized_client", async () => {
      const codeOnly = { authorization: basicAuth(CODE_ONLY_APP.clientId, CODE_ONLY_APP.clientSecret) };
      assertOAuthError(await postForm(url, cc, codeOnly), 400, "unauthorized_client");
      const ccOnly = { authorization: basicAuth(CC_ONLY_APP.clientId, CC_ONLY_APP.clientSecret) };
      assertOAuthError(await postForm(url, userBody, ccOnly), 400, "unauthorized_client");
    });

    it("missing or unknown grant_type", async () => {
      assertOAuthError(await postForm(url, clientBody), 400, "invalid_request");
      assertOAuthError(await postForm(url, { ...clientBody, grant_type: "urn:example:nope" }), 400, "unsupported_grant_type");
    });

    it("password grant without username or password: invalid_request", async () => {
      assertOAuthError(await postForm(url, { grant_type: "password", password: TEST_USER.password }, basic), 400, "invalid_request");
      assertOAuthError(await postForm(url, { grant_type: "password", username: TEST_USER.name }, basic), 400, "invalid_request");
    });

    it("wrong password or unknown user: invalid_grant", async () => {
      assertOAuthError(await postForm(url, { ...userBody, password: "wrong" }, basic), 400, "invalid_grant");
      assertOAuthError(await postForm(url, { ...userBody, username: "mallory" }, basic), 400, "invalid_grant");
    });

    it("a scope we do not know is ignored, not refused (OIDC Core §3.1.2.1)", async () => {
      const res = await postForm(url, { ...cc, scope: "openid admin" }, basic);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.scope, "openid");
    });

    it("a body that is not JSON, or JSON that is not an object: invalid_request", async () => {
      const json = (body: string) => call(url, { method: "POST", headers: { "content-type": "application/json", ...basic }, body });
      assertOAuthError(await json('{"grant_type": "client_credentials"'), 400, "invalid_request");
      assertOAuthError(await json('["grant_type", "client_credentials"]'), 400, "invalid_request");
      assertOAuthError(await json('"client_credentials"'), 400, "invalid_request");
      assertOAuthError(await json('{"grant_type": {"nested": true}}'), 400, "invalid_request");
    });

    it("a content type other than form or JSON: invalid_request", async () => {
      const text = await call(url, { method: "POST", headers: { "content-type": "text/plain", ...basic }, body: "grant_type=client_credentials" });
      assertOAuthError(text, 400, "invalid_request");
    });

    it("a repeated parameter: invalid_request", async () => {
      assertOAuthError(await form("grant_type=client_credentials&grant_type=password", basic), 400, "invalid_request");
      const query = new URLSearchParams({ grant_type: "client_credentials" });
      const both = await call(`${url}?${query}`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded", ...basic }, body: "grant_type=client_credentials" });
      assertOAuthError(both, 400, "invalid_request");
      assertOAuthError(await postJson(url, { grant_type: "client_credentials", grantType: "client_credentials" }, basic), 400, "invalid_request");
    });

    it("a body over the limit: 413, and the connection is not reused", async () => {
      const res = await form("grant_type=client_credentials&pad=" + "x".repeat(70_000), basic);
      assertOAuthError(res, 413, "invalid_request");
      assert.equal(res.headers.get("connection"), "close");
      // A streamed body without Content-Length is cut off the same way.
      const chunk = new TextEncoder().encode("x".repeat(10_000));
      const streamed = await call(url, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", ...basic },
        body: new ReadableStream({ start: (c) => { for (let i = 0; i < 10; i++) c.enqueue(chunk); c.close(); } }),
        duplex: "half",
      } as RequestInit);
      assertOAuthError(streamed, 413, "invalid_request");
      // Whatever the client had left to send must not poison the next requests.
      for (let i = 0; i < 3; i++) assert.equal((await postForm(url, cc, basic)).status, 200);
    });

    it("a method other than POST: 405 with Allow", async () => {
      const res = await call(url);
      assert.equal(res.status, 405);
      assert.equal(res.headers.get("allow"), "POST");
      assert.equal(res.body.error, "invalid_request");
    });
  });
});
