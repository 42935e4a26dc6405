import assert from "node:assert/strict";
import { decodeJwt } from "jose";
import type { RunningServer } from "../../src/app/server.js";
import { signIn } from "../support/browserless.js";
import { getJson, refresh, TOKEN_PATH } from "../support/oauth.js";
import { basicAuth, postForm, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

/**
 * Issue 25, item 2: the `userinfo` member of the `claims` request parameter
 * (OIDC Core §5.5) asks userinfo for standard claims whatever the scope.
 * The request travels with the grant: code, access token, refresh token,
 * and the access tokens a refresh mints.
 */
describe("claims request parameter for userinfo", () => {
  const APP = { ...TEST_APP, refreshExpireInHours: 24 };
  const CLAIMS = JSON.stringify({ userinfo: { email: null, phone_number: { essential: true }, "x-unknown": null } });
  let server: RunningServer;
  let aliceId: string;

  before(async () => {
    server = await startTestServer({ config: { applications: [APP], users: [TEST_USER] } });
    aliceId = (await server.domain.userAdmin.get(TEST_USER.name)).id;
  });
  after(() => server.close());

  // How the user signed in (auth_time, acr, amr: issue 46) is secondFactor.spec.ts's; here, the claims asked for.
  const userinfo = async (token: string) => {
    const res = await getJson(`${server.url}/api/userinfo`, { authorization: `Bearer ${token}` });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const { auth_time: _authTime, acr: _acr, amr: _amr, ...claims } = res.body;
    return claims;
  };

  async function codeTokens(params: Record<string, string>) {
    const { location } = await signIn(server, params);
    const code = location.searchParams.get("code");
    assert.ok(code, location.href);
    const res = await postForm(`${server.url}${TOKEN_PATH}`, { grant_type: "authorization_code", code }, { authorization: basicAuth(APP.clientId, APP.clientSecret) });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body;
  }

  it("returns the standard claims asked for at userinfo beyond the scope, through the code and a refresh", async () => {
    const tokens = await codeTokens({ scope: "openid", claims: CLAIMS });
    const expected = { sub: aliceId, iss: server.issuer, aud: APP.clientId, email: TEST_USER.email, phone_number: TEST_USER.phone };
    assert.deepEqual(await userinfo(tokens.access_token), expected, "a claim the service does not know is left out");
    // Asked of userinfo only: the ID token does not carry them.
    const idToken = decodeJwt(tokens.id_token);
    assert.equal(idToken.email, undefined);
    assert.equal(idToken.phone_number, undefined);

    const refreshed = await refresh(server, tokens.refresh_token, {}, APP);
    assert.equal(refreshed.status, 200, JSON.stringify(refreshed.body));
    assert.deepEqual(await userinfo(refreshed.body.access_token), expected, "the refreshed token keeps the request");
    const again = await refresh(server, refreshed.body.refresh_token, {}, APP);
    assert.deepEqual(await userinfo(again.body.access_token), expected, "and so does the next one");
  });

  it("adds nothing to a grant without the parameter", async () => {
    const tokens = await codeTokens({ scope: "openid" });
    assert.deepEqual(await userinfo(tokens.access_token), { sub: aliceId, iss: server.issuer, aud: APP.clientId });
    assert.equal(decodeJwt(tokens.access_token).userinfo_claims, undefined);
  });

  it("travels with an implicit access token too", async () => {
    const { location } = await signIn(server, { response_type: "token", scope: "openid", claims: JSON.stringify({ userinfo: { name: null } }) });
    const token = new URLSearchParams(location.hash.slice(1)).get("access_token");
    assert.ok(token, location.href);
    assert.deepEqual(await userinfo(token), { sub: aliceId, iss: server.issuer, aud: APP.clientId, name: TEST_USER.displayName });
  });

  it("is answered over POST as over GET", async () => {
    const tokens = await codeTokens({ scope: "openid", claims: CLAIMS });
    const res = await postForm(`${server.url}/api/userinfo`, { access_token: tokens.access_token });
    assert.equal(res.status, 200);
    assert.equal(res.body.email, TEST_USER.email);
  });
});

/**
 * Issue 48 §4: the `id_token` member of the claims request (OIDC Core §5.5)
 * outlives a refresh: an ID token minted by the refresh grant carries the
 * claims the original request asked for, as the first one did.
 */
describe("claims request parameter for the ID token, through a refresh", () => {
  const APP = { ...TEST_APP, refreshExpireInHours: 24 };
  let server: RunningServer;

  before(async () => {
    server = await startTestServer({ config: { applications: [APP], users: [TEST_USER] } });
  });
  after(() => server.close());

  async function codeTokens(params: Record<string, string>) {
    const { location } = await signIn(server, params);
    const code = location.searchParams.get("code");
    assert.ok(code, location.href);
    const res = await postForm(`${server.url}${TOKEN_PATH}`, { grant_type: "authorization_code", code }, { authorization: basicAuth(APP.clientId, APP.clientSecret) });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body;
  }
  const asked = (token: string) => {
    const { email, phone_number, name } = decodeJwt(token);
    return { email, phone_number, name };
  };

  it("keeps the claims asked for in the ID token in every refreshed ID token, and only those", async () => {
    const claims = JSON.stringify({ id_token: { email: { essential: true }, phone_number: null, "x-unknown": null }, userinfo: { name: null } });
    const tokens = await codeTokens({ scope: "openid", claims });
    const expected = { email: TEST_USER.email, phone_number: TEST_USER.phone, name: undefined };
    assert.deepEqual(asked(tokens.id_token), expected);

    const refreshed = await refresh(server, tokens.refresh_token, {}, APP);
    assert.equal(refreshed.status, 200, JSON.stringify(refreshed.body));
    assert.deepEqual(asked(refreshed.body.id_token), expected, "the refreshed ID token keeps the request");
    assert.equal(decodeJwt(refreshed.body.id_token)["x-unknown"], undefined);
    const again = await refresh(server, refreshed.body.refresh_token, {}, APP);
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.deepEqual(asked(again.body.id_token), expected, "and so does the next one");
    // The userinfo member still travels beside it.
    const info = await getJson(`${server.url}/api/userinfo`, { authorization: `Bearer ${again.body.access_token}` });
    assert.equal(info.body.name, TEST_USER.displayName);
  });

  it("adds nothing to a refreshed ID token whose grant asked for nothing", async () => {
    const tokens = await codeTokens({ scope: "openid" });
    const refreshed = await refresh(server, tokens.refresh_token, {}, APP);
    assert.equal(refreshed.status, 200, JSON.stringify(refreshed.body));
    assert.deepEqual(asked(refreshed.body.id_token), { email: undefined, phone_number: undefined, name: undefined });
  });
});
