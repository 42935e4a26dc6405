import assert from "node:assert/strict";
import type { RunningServer } from "../../src/app/server.js";
import { passwordTokens, refresh, TOKEN_PATH } from "../support/oauth.js";
import { signIn } from "../support/browserless.js";
import { basicAuth, postForm, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

/**
 * Issue 25, item 3: a scope the service does not know is ignored, not
 * refused (OIDC Core §3.1.2.1), on the authorize endpoint and every grant;
 * the response's `scope` says what was granted. `offline_access` is granted
 * as a scope, and every user grant issues a refresh token with or without it.
 */
describe("unknown scopes are ignored, not rejected", () => {
  const APP = { ...TEST_APP, refreshExpireInHours: 24 };
  let server: RunningServer;
  before(async () => {
    server = await startTestServer({ config: { applications: [APP], users: [TEST_USER] } });
  });
  after(() => server.close());

  const basic = { authorization: basicAuth(APP.clientId, APP.clientSecret) };

  it("authorize with Casdoor's scope=read signs in and grants openid", async () => {
    const { location } = await signIn(server, { scope: "read" });
    const code = location.searchParams.get("code");
    assert.ok(code, location.href);
    const res = await postForm(`${server.url}${TOKEN_PATH}`, { grant_type: "authorization_code", code, redirect_uri: APP.redirectUris[0]! }, basic);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.scope, "openid");
    assert.ok(res.body.id_token);
  });

  it("authorize keeps the known scopes of a mixed request", async () => {
    const { location } = await signIn(server, { scope: "openid admin email" });
    const code = location.searchParams.get("code")!;
    const res = await postForm(`${server.url}${TOKEN_PATH}`, { grant_type: "authorization_code", code, redirect_uri: APP.redirectUris[0]! }, basic);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.scope, "openid email");
  });

  it("the password grant drops unknown scopes and grants offline_access with a refresh token", async () => {
    const tokens = await passwordTokens(server, { client: APP, scope: "openid read offline_access profile" });
    assert.equal(tokens.scope, "openid offline_access profile");
    assert.ok(tokens.refresh_token);
    // A refresh token comes with every user grant, offline_access or not (as Casdoor does).
    assert.ok((await passwordTokens(server, { client: APP, scope: "openid" })).refresh_token);
  });

  it("client_credentials with only unknown scopes grants openid", async () => {
    const res = await postForm(`${server.url}${TOKEN_PATH}`, { grant_type: "client_credentials", scope: "read write" }, basic);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.scope, "openid");
  });

  it("a refresh ignores unknown scopes but still refuses a wider known one", async () => {
    const tokens = await passwordTokens(server, { client: APP, scope: "openid profile" });
    const narrowed = await refresh(server, tokens.refresh_token!, { scope: "profile read" }, APP);
    assert.equal(narrowed.status, 200, JSON.stringify(narrowed.body));
    assert.equal(narrowed.body.scope, "profile");
    const unknownOnly = await refresh(server, narrowed.body.refresh_token, { scope: "read" }, APP);
    assert.equal(unknownOnly.status, 200, JSON.stringify(unknownOnly.body));
    assert.equal(unknownOnly.body.scope, "openid profile");
    const wider = await refresh(server, unknownOnly.body.refresh_token, { scope: "openid email" }, APP);
    assert.equal(wider.status, 400);
    assert.equal(wider.body.error, "invalid_scope");
  });
});
