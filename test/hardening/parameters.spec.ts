import assert from "node:assert/strict";
import type { RunningServer } from "../../src/app/server.js";
import { basicAuth, call, postForm, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

const TOKEN_PATH = "/api/login/oauth/access_token";
const REFRESH_PATH = "/api/login/oauth/refresh_token";
const INTROSPECT_PATH = "/api/login/oauth/introspect";
const REVOKE_PATH = "/api/login/oauth/revoke";

describe("request parameters", () => {
  let server: RunningServer;
  let refreshToken: string;
  let accessToken: string;
  const basic = basicAuth(TEST_APP.clientId, TEST_APP.clientSecret);
  before(async () => {
    server = await startTestServer({ config: { applications: [{ ...TEST_APP, refreshExpireInHours: 1 }], users: [TEST_USER] } });
    const tokens = await postForm(`${server.url}${TOKEN_PATH}`, { grant_type: "password", username: TEST_USER.name, password: TEST_USER.password, scope: "openid" }, { authorization: basic });
    assert.equal(tokens.status, 200);
    ({ refresh_token: refreshToken, access_token: accessToken } = tokens.body);
  });
  after(() => server.close());

  /** POST with `query` in the URL and `form` as the body. */
  const post = (path: string, query: Record<string, string>, form: Record<string, string>, headers: Record<string, string> = {}) =>
    postForm(`${server.url}${path}?${new URLSearchParams(query)}`, form, headers);

  it("refuses secrets in the query string: client_secret, password and refresh_token at the token, refresh, introspection and revocation endpoints (RFC 6749 §2.3.1)", async () => {
    const secret = { client_id: TEST_APP.clientId, client_secret: TEST_APP.clientSecret };
    const cases: Array<[string, Record<string, string>, Record<string, string>, Record<string, string>?]> = [
      [TOKEN_PATH, secret, { grant_type: "client_credentials" }],
      [TOKEN_PATH, { clientSecret: TEST_APP.clientSecret }, { grant_type: "client_credentials", client_id: TEST_APP.clientId }],
      [TOKEN_PATH, { password: TEST_USER.password }, { grant_type: "password", username: TEST_USER.name }, { authorization: basic }],
      [TOKEN_PATH, { refresh_token: refreshToken }, { grant_type: "refresh_token" }, { authorization: basic }],
      [REFRESH_PATH, { refresh_token: refreshToken }, { grant_type: "refresh_token" }, { authorization: basic }],
      [REFRESH_PATH, { refreshToken }, { grant_type: "refresh_token" }, { authorization: basic }],
      [REFRESH_PATH, secret, { grant_type: "refresh_token", refresh_token: refreshToken }],
      [INTROSPECT_PATH, secret, { token: accessToken }],
      [REVOKE_PATH, secret, { token: accessToken }],
    ];
    for (const [path, query, form, headers] of cases) {
      const res = await post(path, query, form, headers);
      const what = `${path}?${Object.keys(query).join("&")}`;
      assert.equal(res.status, 400, what);
      assert.equal(res.body.error, "invalid_request", what);
      assert.match(res.body.error_description, /request body/, what);
    }
    // Nothing was done: the refresh token and the access token still work.
    const introspected = await postForm(`${server.url}${INTROSPECT_PATH}`, { token: accessToken }, { authorization: basic });
    assert.equal(introspected.body.active, true);
    const refreshed = await postForm(`${server.url}${REFRESH_PATH}`, { grant_type: "refresh_token", refresh_token: refreshToken }, { authorization: basic });
    assert.equal(refreshed.status, 200);
    refreshToken = refreshed.body.refresh_token;
    // What is no secret may still come in the query.
    assert.equal((await post(TOKEN_PATH, { grant_type: "client_credentials" }, {}, { authorization: basic })).status, 200);
  });

  it("refuses a parameter sent twice: twice in the query, twice in the body, or in both (RFC 6749 §3.1)", async () => {
    const twice = async (target: string, body: string, contentType = "application/x-www-form-urlencoded") => {
      const res = await call(`${server.url}${target}`, { method: "POST", headers: { authorization: basic, "content-type": contentType }, body });
      assert.equal(res.status, 400, `${target} ${body}`);
      assert.equal(res.body.error, "invalid_request");
      assert.match(res.body.error_description, /repeated/);
    };
    await twice(`${TOKEN_PATH}?grant_type=client_credentials&grant_type=client_credentials`, "");
    await twice(TOKEN_PATH, "grant_type=client_credentials&scope=a&scope=b");
    await twice(`${TOKEN_PATH}?scope=a`, "grant_type=client_credentials&scope=b");
    await twice(`${TOKEN_PATH}?scope=a`, JSON.stringify({ grant_type: "client_credentials", scope: "b" }), "application/json");
  });

  it("refuses a JSON body with a duplicate key, which JSON.parse would silently resolve to the last", async () => {
    const json = (body: string) =>
      call(`${server.url}${TOKEN_PATH}`, { method: "POST", headers: { authorization: basic, "content-type": "application/json" }, body });
    for (const body of [
      '{"grant_type":"client_credentials","scope":"openid","scope":"admin"}',
      '{"grant_type":"password","grant_type":"client_credentials"}',
      // The same key spelled with an escape is the same key.
      '{"grant_type":"client_credentials","scope":"a","sc\\u006fpe":"b"}',
      ' { "grant_type" : "client_credentials" ,\n "client_id" : "x" , "client_id" : "y" } ',
    ]) {
      const res = await json(body);
      assert.equal(res.status, 400, body);
      assert.equal(res.body.error, "invalid_request", body);
      assert.match(res.body.error_description, /repeated/, body);
    }
    // Keys that only look alike, and the same word inside string values, are fine.
    const fine = await json('{"grant_type":"client_credentials","scope":"openid","Scope":"x","note":"\\"scope\\":\\"y\\""}');
    assert.equal(fine.status, 200, JSON.stringify(fine.body));
  });
});
