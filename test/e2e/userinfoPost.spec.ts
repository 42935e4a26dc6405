import assert from "node:assert/strict";
import type { RunningServer } from "../../src/app/server.js";
import { call, getJson, passwordTokens, postJson } from "../support/oauth.js";
import { postForm, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

/**
 * Issue 25, item 1: userinfo over POST (OIDC Core §5.3.1). The token comes
 * as a Bearer header or as an `access_token` form field (RFC 6750 §2.2),
 * never in a POST's query string nor in a JSON body. The route is the
 * contract's additional binding of GetUserInfo, so the RPC is unchanged.
 */
describe("userinfo over POST", () => {
  let server: RunningServer;
  let token: string;
  let expected: unknown;
  let userinfo: string;

  before(async () => {
    server = await startTestServer({ config: { applications: [TEST_APP], users: [TEST_USER] } });
    userinfo = `${server.url}/api/userinfo`;
    token = (await passwordTokens(server, { scope: "openid profile email" })).access_token;
    const byGet = await getJson(userinfo, { authorization: `Bearer ${token}` });
    assert.equal(byGet.status, 200);
    expected = byGet.body;
  });
  after(() => server.close());

  it("answers a POST with a Bearer header as a GET does", async () => {
    const res = await call(userinfo, { method: "POST", headers: { authorization: `Bearer ${token}` } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body, expected);
    assert.equal(res.headers.get("cache-control"), "no-store");
  });

  it("answers a POST with the access_token form field", async () => {
    const res = await postForm(userinfo, { access_token: token });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body, expected);
  });

  it("refuses the access_token in the query string of a POST", async () => {
    for (const name of ["access_token", "accessToken"]) {
      const res = await call(`${userinfo}?${name}=${encodeURIComponent(token)}`, { method: "POST" });
      assert.equal(res.status, 400, name);
      assert.equal(res.body.error, "invalid_request");
      assert.match(res.body.error_description, /never in the URL/);
    }
  });

  it("refuses the access_token in a JSON body", async () => {
    const res = await postJson(userinfo, { access_token: token });
    assert.equal(res.status, 400);
    assert.equal(res.body.error, "invalid_request");
  });

  it("refuses a token in the form and in the header at once (RFC 6750 §2)", async () => {
    const res = await postForm(userinfo, { access_token: token }, { authorization: `Bearer ${token}` });
    assert.equal(res.status, 400);
    assert.equal(res.body.error, "invalid_request");
  });

  it("answers a POST without a token with 401 invalid_token", async () => {
    const res = await call(userinfo, { method: "POST" });
    assert.equal(res.status, 401);
    assert.match(res.headers.get("www-authenticate") ?? "", /^Bearer /);
  });

  it("still answers other methods with 405, naming GET and POST", async () => {
    const res = await call(userinfo, { method: "PUT" });
    assert.equal(res.status, 405);
    assert.equal(res.headers.get("allow"), "GET, POST");
  });
});
