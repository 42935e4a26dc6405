import assert from "node:assert/strict";
import * as oauth from "oauth4webapi";
import type { RunningServer } from "../../src/app/server.js";
import { freshSharedTestDatabase } from "../support/databases.js";
import { GrpcCaller, oauthErrorOf } from "../support/grpc.js";
import { getJson, isActive, passwordTokens, refresh, type TestClient } from "../support/oauth.js";
import { basicAuth, postForm, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

const APP = { ...TEST_APP, refreshExpireInHours: 24 };
const OTHER_APP = { ...TEST_APP, name: "other", clientId: "client-2", clientSecret: "secret-2-of-client-2", refreshExpireInHours: 24 };

describe("revocation (RFC 7009)", () => {
  // A file (or schema), so a second instance can share it.
  const shared = freshSharedTestDatabase();
  const database = shared.url;
  const config = { applications: [APP, OTHER_APP], users: [TEST_USER] };
  let server: RunningServer;
  before(async () => (server = await startTestServer({ database, config })));
  after(async () => {
    await server?.close();
    await shared.dispose();
  });

  /** Revoke through a strict client; processRevocationResponse insists on a 200. */
  async function revoke(token: string, hint?: string, client: TestClient = APP): Promise<void> {
    const as: oauth.AuthorizationServer = { issuer: server.issuer, revocation_endpoint: `${server.url}/api/login/oauth/revoke` };
    const response = await oauth.revocationRequest(as, { client_id: client.clientId }, oauth.ClientSecretBasic(client.clientSecret), token, {
      [oauth.allowInsecureRequests]: true,
      ...(hint ? { additionalParameters: { token_type_hint: hint } } : {}),
    });
    await oauth.processRevocationResponse(response);
  }

  const userinfoStatus = async (token: string) => (await getJson(`${server.url}/api/userinfo?accessToken=${token}`)).status;

  it("makes a revoked access token inactive for introspection and userinfo at once, and leaves its siblings alone", async () => {
    const tokens = await passwordTokens(server);
    assert.equal(await userinfoStatus(tokens.access_token), 200);
    await revoke(tokens.access_token, "access_token");
    assert.equal(await isActive(server, tokens.access_token), false);
    assert.equal(await userinfoStatus(tokens.access_token), 401);
    // RFC 7009 lets an access token's revocation leave the refresh token alone; we do.
    assert.equal((await refresh(server, tokens.refresh_token!)).status, 200);
  });

  it("revokes the whole family with a refresh token, whatever the hint says", async () => {
    const first = await passwordTokens(server);
    const second = (await refresh(server, first.refresh_token!)).body;
    await revoke(second.refresh_token, "access_token");
    for (const token of [first.access_token, second.access_token]) {
      assert.equal(await isActive(server, token), false);
      assert.equal(await userinfoStatus(token), 401);
    }
    const res = await refresh(server, second.refresh_token);
    assert.equal(res.body.error, "invalid_grant");
    assert.match(res.body.error_description, /revoked/);
  });

  it("answers 200 for unknown tokens and for other clients' tokens, which stay valid", async () => {
    await revoke("no-such-token");
    const tokens = await passwordTokens(server);
    await revoke(tokens.access_token, undefined, OTHER_APP);
    await revoke(tokens.refresh_token!, undefined, OTHER_APP);
    assert.equal(await isActive(server, tokens.access_token), true);
    assert.equal((await refresh(server, tokens.refresh_token!)).status, 200);
  });

  it("requires client authentication and a token", async () => {
    const url = `${server.url}/api/login/oauth/revoke`;
    const anonymous = await postForm(url, { token: "x" });
    assert.equal(anonymous.status, 401);
    assert.equal(anonymous.body.error, "invalid_client");
    const wrong = await postForm(url, { token: "x" }, { authorization: basicAuth(APP.clientId, "wrong") });
    assert.equal(wrong.status, 401);
    const missing = await postForm(url, {}, { authorization: basicAuth(APP.clientId, APP.clientSecret) });
    assert.equal(missing.status, 400);
    assert.equal(missing.body.error, "invalid_request");
  });

  it("takes effect on another instance sharing the database", async () => {
    const other = await startTestServer({ database, config });
    try {
      const tokens = await passwordTokens(server);
      assert.equal(await isActive(other, tokens.access_token), true);
      await revoke(tokens.access_token);
      assert.equal(await isActive(other, tokens.access_token), false);
      assert.equal((await getJson(`${other.url}/api/userinfo?accessToken=${tokens.access_token}`)).status, 401);
    } finally {
      await other.close();
    }
  });

  it("serves Revoke over gRPC", async () => {
    const grpc = new GrpcCaller(server.url);
    try {
      const tokens = await passwordTokens(server);
      await grpc.call("IntrospectionService", "Revoke", { token: tokens.access_token }, { authorization: basicAuth(APP.clientId, APP.clientSecret) });
      assert.equal(await isActive(server, tokens.access_token), false);
      await assert.rejects(
        grpc.call("IntrospectionService", "Revoke", { token: tokens.access_token, client_id: APP.clientId }),
        (err) => oauthErrorOf(err) === "invalid_client",
      );
    } finally {
      grpc.close();
    }
  });
});
