import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { createRemoteJWKSet, decodeJwt, jwtVerify } from "jose";
import { ApplicationAdminService } from "../../gen/identity/v1/admin_pb.js";
import { TokenService } from "../../gen/identity/v1/token_pb.js";
import { runAdminCommand } from "../../src/app/adminCommands.js";
import type { RunningServer } from "../../src/app/server.js";
import { sha256 } from "../../src/oauth/secrets.js";
import { signIn } from "../support/browserless.js";
import { FakeClock } from "../support/clock.js";
import { getJson, INTROSPECT_PATH, passwordTokens, refresh, TOKEN_PATH } from "../support/oauth.js";
import { connectClients } from "../support/rpc.js";
import { ADMIN_TOKEN, basicAuth, postForm, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

/**
 * Issue 28 §2: an application's accessTokenStrategy `opaque` issues access
 * tokens that are 256 random bits, stored only as their SHA-256, read only
 * by introspection, userinfo and get-account; the ID token stays a JWT.
 */
const OPAQUE_APP = {
  ...TEST_APP, name: "opaque-app", clientId: "client-opaque", clientSecret: "secret-of-client-opaque",
  refreshExpireInHours: 24, accessTokenStrategy: "opaque",
};
const OPAQUE = /^[A-Za-z0-9_-]{43}$/;

describe("opaque access tokens (accessTokenStrategy: opaque)", () => {
  let server: RunningServer;
  const clock = new FakeClock();
  const basic = { authorization: basicAuth(OPAQUE_APP.clientId, OPAQUE_APP.clientSecret) };
  const introspect = (token: string) => postForm(server.url + INTROSPECT_PATH, { token }, basic);
  const userinfo = (token: string) => getJson(`${server.url}/api/userinfo`, { authorization: `Bearer ${token}` });
  const account = (token: string) => getJson(`${server.url}/api/get-account`, { authorization: `Bearer ${token}` });

  before(async () => {
    server = await startTestServer({ clock, config: { applications: [TEST_APP, OPAQUE_APP], users: [TEST_USER] } });
  });
  after(() => server.close());

  it("issues a random access token beside a JWT ID token whose at_hash is the token's", async () => {
    const tokens = await passwordTokens(server, { client: OPAQUE_APP, scope: "openid profile email" });
    assert.match(tokens.access_token, OPAQUE);
    assert.throws(() => decodeJwt(tokens.access_token));
    assert.equal(tokens.token_type, "Bearer");
    assert.equal(tokens.expires_in, 3600);
    const { payload } = await jwtVerify(tokens.id_token!, createRemoteJWKSet(new URL(`${server.url}/.well-known/jwks`)), {
      currentDate: new Date(clock.now()),
      audience: OPAQUE_APP.clientId,
    });
    const digest = createHash("sha256").update(tokens.access_token, "ascii").digest();
    assert.equal(payload.at_hash, digest.subarray(0, 16).toString("base64url"));
    // Stored only as its hash.
    const rows = await server.store.db("access_tokens").where({ client_id: OPAQUE_APP.clientId });
    assert.ok(rows.length > 0);
    assert.ok(rows.every((r: Record<string, unknown>) => !Object.values(r).includes(tokens.access_token)));
    assert.ok(rows.some((r: Record<string, unknown>) => r.token_hash === sha256(tokens.access_token)), "keyed by its SHA-256");
    // Another application's tokens stay JWTs.
    assert.equal(decodeJwt((await passwordTokens(server)).access_token).aud, TEST_APP.clientId);
  });

  it("is read by introspection, userinfo and get-account like a JWT", async () => {
    const tokens = await passwordTokens(server, { client: OPAQUE_APP, scope: "openid profile email" });
    const jwt = await passwordTokens(server, { scope: "openid profile email" });
    const answer = (await introspect(tokens.access_token)).body;
    const jwtAnswer = (await postForm(server.url + INTROSPECT_PATH, { token: jwt.access_token }, { authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret) })).body;
    assert.equal(answer.active, true);
    assert.equal(answer.client_id, OPAQUE_APP.clientId);
    assert.equal(answer.username, TEST_USER.name);
    assert.equal(answer.sub, jwtAnswer.sub);
    assert.equal(answer.iss, jwtAnswer.iss);
    assert.equal(answer.scope, "openid profile email");
    assert.equal(answer.exp - answer.iat, 3600);
    assert.equal(answer.token_type, "Bearer");
    assert.ok(answer.jti);
    // How the user signed in (RFC 9068 §2.2.1), from the row as a JWT's from its payload.
    assert.deepEqual([answer.auth_time, answer.acr, answer.amr], [jwtAnswer.auth_time, "pwd", ["pwd"]]);
    assert.equal(answer.auth_time, Math.floor(clock.now() / 1000));

    const info = await userinfo(tokens.access_token);
    assert.equal(info.status, 200);
    assert.equal(info.body.sub, jwtAnswer.sub);
    assert.equal(info.body.preferred_username, TEST_USER.name);
    assert.equal(info.body.aud, OPAQUE_APP.clientId);
    assert.deepEqual([info.body.auth_time, info.body.acr, info.body.amr], [answer.auth_time, "pwd", ["pwd"]]);
    const acct = await account(tokens.access_token);
    assert.equal(acct.status, 200);
    assert.equal(acct.body.data.name, TEST_USER.name);

    // client_credentials: the token stands for the application.
    const cc = await postForm(server.url + TOKEN_PATH, { grant_type: "client_credentials" }, basic);
    assert.match(cc.body.access_token, OPAQUE);
    const ccAnswer = (await introspect(cc.body.access_token)).body;
    assert.equal(ccAnswer.active, true);
    assert.equal(ccAnswer.sub, OPAQUE_APP.clientId);
    assert.deepEqual([ccAnswer.auth_time, ccAnswer.acr, ccAnswer.amr], [undefined, undefined, undefined], "no user signed in");
    const ccRow = await server.store.db("access_tokens").where({ token_hash: sha256(cc.body.access_token) }).first();
    assert.deepEqual([ccRow.auth_time, ccRow.acr, ccRow.amr], [null, null, null]);
    // A JWT's row keeps none: its payload says it.
    const jwtRow = await server.store.db("access_tokens").where({ token_hash: sha256(jwt.access_token) }).first();
    assert.deepEqual([jwtRow.auth_time, jwtRow.acr, jwtRow.amr], [null, null, null]);
    assert.equal((await userinfo(cc.body.access_token)).status, 401);

    // gRPC issues the same kind.
    const viaGrpc = await connectClients(TokenService, server.url).grpc.token({
      grantType: "password", clientId: OPAQUE_APP.clientId, clientSecret: OPAQUE_APP.clientSecret,
      username: TEST_USER.name, password: TEST_USER.password, scope: "openid",
    });
    assert.match(viaGrpc.accessToken, OPAQUE);
    assert.equal((await introspect(viaGrpc.accessToken)).body.active, true);
  });

  it("refreshes into a new opaque token, and reuse of a consumed refresh token revokes the family", async () => {
    const first = await passwordTokens(server, { client: OPAQUE_APP, scope: "openid profile" });
    const signedInAt = (await introspect(first.access_token)).body.auth_time;
    clock.advanceSeconds(60);
    const second = await refresh(server, first.refresh_token!, {}, OPAQUE_APP);
    assert.equal(second.status, 200, JSON.stringify(second.body));
    assert.match(second.body.access_token, OPAQUE);
    assert.notEqual(second.body.access_token, first.access_token);
    const refreshed = (await introspect(second.body.access_token)).body;
    assert.equal(refreshed.active, true);
    // A refresh is no sign-in: the new token says when the user did sign in, as a refreshed JWT does.
    assert.deepEqual([refreshed.auth_time, refreshed.acr, refreshed.amr], [signedInAt, "pwd", ["pwd"]]);
    assert.equal((await userinfo(second.body.access_token)).status, 200);

    const reused = await refresh(server, first.refresh_token!, {}, OPAQUE_APP);
    assert.equal(reused.status, 400);
    assert.equal(reused.body.error, "invalid_grant");
    assert.equal((await introspect(second.body.access_token)).body.active, false, "the family is revoked");
    assert.equal((await userinfo(second.body.access_token)).status, 401);
  });

  it("keeps the claims parameter's userinfo member in its row, through the code and a refresh", async () => {
    const claims = JSON.stringify({ userinfo: { email: null, phone_number: null } });
    const { location } = await signIn(server, { client_id: OPAQUE_APP.clientId, scope: "openid", claims });
    const code = location.searchParams.get("code");
    assert.ok(code, location.href);
    const tokens = await postForm(server.url + TOKEN_PATH, { grant_type: "authorization_code", code }, basic);
    assert.equal(tokens.status, 200, JSON.stringify(tokens.body));
    assert.match(tokens.body.access_token, OPAQUE);
    const info = (await userinfo(tokens.body.access_token)).body;
    assert.equal(info.email, TEST_USER.email);
    assert.equal(info.phone_number, TEST_USER.phone);
    const refreshed = await refresh(server, tokens.body.refresh_token, {}, OPAQUE_APP);
    assert.equal((await userinfo(refreshed.body.access_token)).body.email, TEST_USER.email);
    // Without the parameter, nothing beyond the scope.
    const plain = await passwordTokens(server, { client: OPAQUE_APP, scope: "openid" });
    assert.equal((await userinfo(plain.access_token)).body.email, undefined);
  });

  it("is revoked like a JWT: inactive and refused at once", async () => {
    const tokens = await passwordTokens(server, { client: OPAQUE_APP, scope: "openid" });
    const revoked = await postForm(`${server.url}/api/login/oauth/revoke`, { token: tokens.access_token }, basic);
    assert.equal(revoked.status, 200);
    assert.equal((await introspect(tokens.access_token)).body.active, false);
    assert.equal((await userinfo(tokens.access_token)).status, 401);
    assert.equal((await account(tokens.access_token)).status, 401);
    // Another client cannot revoke it, nor read it by introspection.
    const other = await passwordTokens(server, { client: OPAQUE_APP, scope: "openid" });
    await postForm(`${server.url}/api/login/oauth/revoke`, { token: other.access_token }, { authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret) });
    assert.equal((await introspect(other.access_token)).body.active, true);
  });

  it("expires at its time: inactive and refused after expireInHours", async () => {
    const tokens = await passwordTokens(server, { client: OPAQUE_APP, scope: "openid" });
    clock.advanceSeconds(3600 - 1);
    assert.equal((await introspect(tokens.access_token)).body.active, true);
    assert.equal((await userinfo(tokens.access_token)).status, 200);
    clock.advanceSeconds(2);
    assert.equal((await introspect(tokens.access_token)).body.active, false);
    assert.equal((await userinfo(tokens.access_token)).status, 401);
  });

  it("refuses a token of the right shape that it never issued", async () => {
    const guessed = "A".repeat(43);
    assert.equal((await introspect(guessed)).body.active, false);
    assert.equal((await userinfo(guessed)).status, 401);
  });

  it("is set over the admin RPC and the CLI, and refuses other strategies", async () => {
    const apps = createClient(ApplicationAdminService, createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" }));
    const headers = { authorization: `Bearer ${ADMIN_TOKEN}` };
    const created = await apps.createApplication({ application: { name: "rpc-opaque", accessTokenStrategy: "opaque" } }, { headers });
    assert.equal(created.application?.accessTokenStrategy, "opaque");
    const plain = await apps.createApplication({ application: { name: "rpc-plain" } }, { headers });
    assert.equal(plain.application?.accessTokenStrategy, "jwt");
    const refused = await apps.createApplication({ application: { name: "rpc-bad", accessTokenStrategy: "reference" } }, { headers }).then(
      () => undefined,
      (err: Error) => err.message,
    );
    assert.match(String(refused), /accessTokenStrategy: is not one of jwt, opaque/);

    const database = join(mkdtempSync(join(tmpdir(), "identity-opaque-cli-")), "cli.db");
    const cli = JSON.parse(await runAdminCommand("app", ["create", "--name", "cli-opaque", "--access-token-strategy", "opaque", "--database", database], {}));
    assert.equal(cli.accessTokenStrategy, "opaque");
  });
});
