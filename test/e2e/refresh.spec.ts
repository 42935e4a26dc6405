import assert from "node:assert/strict";
import * as oauth from "oauth4webapi";
import type { RunningServer } from "../../src/app/server.js";
import { FakeClock } from "../support/clock.js";
import { GrpcCaller, oauthErrorOf } from "../support/grpc.js";
import { isActive, passwordTokens, refresh } from "../support/oauth.js";
import { basicAuth, postForm, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

const APP = { ...TEST_APP, refreshExpireInHours: 24 };
const NO_REFRESH_APP = { ...TEST_APP, name: "no-refresh", clientId: "client-0", clientSecret: "secret-0-of-client-0", refreshExpireInHours: 0 };
const OTHER_APP = { ...TEST_APP, name: "other", clientId: "client-2", clientSecret: "secret-2-of-client-2", refreshExpireInHours: 24 };
const BOB = { name: "bob", password: "pw-bob-123456" };
const CAROL = { name: "carol", password: "pw-carol-1234" };

describe("refresh tokens", () => {
  const clock = new FakeClock();
  let server: RunningServer;

  before(async () => {
    server = await startTestServer({
      clock,
      config: { applications: [APP, NO_REFRESH_APP, OTHER_APP], users: [TEST_USER, BOB, CAROL] },
    });
  });
  after(() => server.close());

  // Runs first: oauth4webapi checks token times against the real clock.
  const client: oauth.Client = { client_id: APP.clientId };
  const auth = oauth.ClientSecretPost(APP.clientSecret);
  const insecure = { [oauth.allowInsecureRequests]: true };

  for (const path of ["/api/login/oauth/refresh_token", "/api/login/oauth/access_token"]) {
    it(`rotates the whole token set at ${path} (oauth4webapi)`, async () => {
      const as: oauth.AuthorizationServer = { issuer: server.issuer, token_endpoint: `${server.url}${path}` };
      const first = await passwordTokens(server, { scope: "openid profile" });
      clock.advanceSeconds(1); // ID tokens carry no jti: a new one differs by its iat
      const response = await oauth.refreshTokenGrantRequest(as, client, auth, first.refresh_token!, insecure);
      // Validates the ID token (signature aside): iss, aud, exp, iat.
      const second = await oauth.processRefreshTokenResponse(as, client, response);
      assert.equal(second.token_type, "bearer");
      assert.equal(second.scope, "openid profile");
      assert.equal(second.expires_in, 3600);
      assert.ok(second.refresh_token && second.refresh_token !== first.refresh_token);
      assert.ok(second.id_token && second.id_token !== first.id_token);
      assert.equal(oauth.getValidatedIdTokenClaims(second)!.name, TEST_USER.displayName);
      assert.ok(second.access_token !== first.access_token);
      assert.equal(await isActive(server, second.access_token), true);
    });
  }

  it("refuses every refresh for an application whose refreshExpireInHours is 0, naming the setting", async () => {
    const tokens = await passwordTokens(server, { client: NO_REFRESH_APP });
    const res = await refresh(server, tokens.refresh_token!, {}, NO_REFRESH_APP);
    assert.equal(res.status, 400);
    assert.equal(res.body.error, "invalid_grant");
    assert.match(res.body.error_description, /refreshExpireInHours/);
  });

  it("consumes the old refresh token and chains from the new one", async () => {
    const first = await passwordTokens(server);
    let current = first.refresh_token!;
    for (let i = 0; i < 3; i++) {
      const next = await refresh(server, current);
      assert.equal(next.status, 200, JSON.stringify(next.body));
      assert.equal(next.headers.get("cache-control"), "no-store");
      assert.notEqual(next.body.refresh_token, current);
      current = next.body.refresh_token;
    }
    const again = await refresh(server, first.refresh_token!);
    assert.equal(again.status, 400);
    assert.equal(again.body.error, "invalid_grant");
  });

  it("revokes the whole family when a consumed refresh token comes back (reuse detection)", async () => {
    const original = await passwordTokens(server);
    const rotated = await refresh(server, original.refresh_token!);
    assert.equal(rotated.status, 200);
    assert.equal(await isActive(server, rotated.body.access_token), true);

    const reuse = await refresh(server, original.refresh_token!);
    assert.equal(reuse.status, 400);
    assert.equal(reuse.body.error, "invalid_grant");
    assert.match(reuse.body.error_description, /revoked/);

    assert.equal(await isActive(server, original.access_token), false);
    assert.equal(await isActive(server, rotated.body.access_token), false);
    const descendant = await refresh(server, rotated.body.refresh_token);
    assert.equal(descendant.status, 400);
    assert.equal(descendant.body.error, "invalid_grant");
  });

  it("narrows the scope, keeps it when none is sent, and refuses widening without consuming the token", async () => {
    const tokens = await passwordTokens(server, { scope: "openid email profile" });
    const wider = await refresh(server, tokens.refresh_token!, { scope: "openid email phone" });
    assert.equal(wider.status, 400);
    assert.equal(wider.body.error, "invalid_scope");

    const same = await refresh(server, tokens.refresh_token!, { scope: "" });
    assert.equal(same.status, 200, JSON.stringify(same.body));
    assert.equal(same.body.scope, "openid email profile");

    const narrower = await refresh(server, same.body.refresh_token, { scope: "openid email" });
    assert.equal(narrower.status, 200);
    assert.equal(narrower.body.scope, "openid email");
    const introspected = await postForm(
      `${server.url}/api/login/oauth/introspect`,
      { token: narrower.body.access_token },
      { authorization: basicAuth(APP.clientId, APP.clientSecret) },
    );
    assert.equal(introspected.body.scope, "openid email");

    // §6: the rotated refresh token keeps the scope of its predecessor, so
    // the original grant stays the ceiling; beyond it is still refused.
    const back = await refresh(server, narrower.body.refresh_token, { scope: "openid email phone" });
    assert.equal(back.body.error, "invalid_scope");
    const restored = await refresh(server, narrower.body.refresh_token, { scope: "openid email profile" });
    assert.equal(restored.status, 200);
    assert.equal(restored.body.scope, "openid email profile");

    const withoutOpenid = await refresh(server, restored.body.refresh_token, { scope: "email" });
    assert.equal(withoutOpenid.status, 200);
    assert.equal(withoutOpenid.body.id_token, undefined, "no ID token without openid");
  });

  it("always checks the client secret, in the body or as Basic auth", async () => {
    const tokens = await passwordTokens(server);
    const url = `${server.url}/api/login/oauth/refresh_token`;
    const noSecret = await postForm(url, { grant_type: "refresh_token", refresh_token: tokens.refresh_token!, client_id: APP.clientId });
    assert.equal(noSecret.status, 401);
    assert.equal(noSecret.body.error, "invalid_client");
    const wrong = await refresh(server, tokens.refresh_token!, {}, { clientId: APP.clientId, clientSecret: "nope" });
    assert.equal(wrong.status, 401);
    const basic = await postForm(
      url,
      { grant_type: "refresh_token", refresh_token: tokens.refresh_token! },
      { authorization: basicAuth(APP.clientId, APP.clientSecret) },
    );
    assert.equal(basic.status, 200, JSON.stringify(basic.body));
  });

  it("accepts a JSON body and refuses another grant type at the refresh endpoint", async () => {
    const tokens = await passwordTokens(server);
    const json = await fetch(`${server.url}/api/login/oauth/refresh_token`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ refresh_token: tokens.refresh_token, client_id: APP.clientId, client_secret: APP.clientSecret }),
    });
    assert.equal(json.status, 200);
    const password = await refresh(server, "x", { grant_type: "password" });
    assert.equal(password.status, 400);
    assert.equal(password.body.error, "unsupported_grant_type");
  });

  it("refuses unknown tokens and another client's tokens without touching them", async () => {
    const unknown = await refresh(server, "not-a-refresh-token");
    assert.equal(unknown.body.error, "invalid_grant");
    const missing = await refresh(server, "");
    assert.equal(missing.body.error, "invalid_request");

    const tokens = await passwordTokens(server);
    const foreign = await refresh(server, tokens.refresh_token!, {}, OTHER_APP);
    assert.equal(foreign.status, 400);
    assert.equal(foreign.body.error, "invalid_grant");
    assert.equal((await refresh(server, tokens.refresh_token!)).status, 200, "the owner can still use it");
  });

  it("expires refresh tokens refreshExpireInHours after they were issued", async () => {
    const tokens = await passwordTokens(server);
    const rotated = await refresh(server, tokens.refresh_token!);
    clock.advanceSeconds(24 * 3600 - 1);
    const inTime = await refresh(server, rotated.body.refresh_token);
    assert.equal(inTime.status, 200, "the rotated token lives 24 h from its own issue");
    clock.advanceSeconds(24 * 3600);
    const late = await refresh(server, inTime.body.refresh_token);
    assert.equal(late.status, 400);
    assert.match(late.body.error_description, /expired/);
  });

  it("refuses refresh for a disabled or deleted user and for a deleted application", async () => {
    const bobs = await passwordTokens(server, { user: BOB });
    await server.domain.userAdmin.update({ name: BOB.name, disabled: true });
    const disabled = await refresh(server, bobs.refresh_token!);
    assert.equal(disabled.body.error, "invalid_grant");

    const carols = await passwordTokens(server, { user: CAROL, client: OTHER_APP });
    await server.domain.userAdmin.delete(CAROL.name);
    const deleted = await refresh(server, carols.refresh_token!, {}, OTHER_APP);
    assert.equal(deleted.body.error, "invalid_grant");

    const alices = await passwordTokens(server, { client: OTHER_APP });
    await server.domain.applicationAdmin.delete(OTHER_APP.name);
    const noApp = await refresh(server, alices.refresh_token!, {}, OTHER_APP);
    assert.equal(noApp.status, 401);
    assert.equal(noApp.body.error, "invalid_client");
  });

  it("serves Refresh over gRPC with the same rules", async () => {
    const grpc = new GrpcCaller(server.url);
    try {
      const tokens = await passwordTokens(server, { scope: "openid email" });
      const request = { refresh_token: tokens.refresh_token, client_id: APP.clientId, client_secret: APP.clientSecret };
      const rotated = await grpc.call("TokenService", "Refresh", request);
      assert.equal(rotated.token_type, "Bearer");
      assert.equal(rotated.scope, "openid email");
      assert.equal(rotated.expires_in, 3600);
      await assert.rejects(grpc.call("TokenService", "Refresh", request), (err) => oauthErrorOf(err) === "invalid_grant");
    } finally {
      grpc.close();
    }
  });
});
