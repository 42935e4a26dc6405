import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { ApplicationAdminService } from "../../gen/identity/v1/admin_pb.js";
import { runAdminCommand } from "../../src/app/adminCommands.js";
import type { RunningServer } from "../../src/app/server.js";
import { passwordTokens, tokenVerifier } from "../support/oauth.js";
import { ADMIN_TOKEN, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

/**
 * Issue 25, item 5: an application's `tokenFormat`, with Casdoor's names.
 * `JWT-Standard` (the default) keeps OIDC's standard claims; `JWT` puts
 * Casdoor's user-object claims in the access token and the ID token. Set
 * from the config file, the admin RPC and the CLI; anything else refused.
 */
describe("tokenFormat: JWT-Standard by default, Casdoor's user-object claims with JWT", () => {
  const JWT_APP = { ...TEST_APP, name: "casdoor-style", clientId: "client-casdoor", tokenFormat: "JWT" };
  // A user with only a name and a password: the fallbacks show.
  const BARE = { name: "bare", password: "pw-bare-12345" };
  let server: RunningServer;

  before(async () => {
    server = await startTestServer({ config: { applications: [TEST_APP, JWT_APP], users: [TEST_USER, BARE] } });
  });
  after(() => server.close());

  it("JWT-Standard (the default): OIDC claims, none of Casdoor's", async () => {
    assert.equal((await server.domain.applicationAdmin.get(TEST_APP.name)).tokenFormat, "JWT-Standard");
    const tokens = await passwordTokens(server, { scope: "openid profile" });
    const verify = await tokenVerifier(server, TEST_APP.clientId);
    const access = await verify(tokens.access_token, "at+jwt");
    assert.equal(access.name, TEST_USER.displayName);
    assert.equal(access.preferred_username, TEST_USER.name);
    for (const claim of ["owner", "displayName", "type", "id"]) assert.equal(access[claim], undefined, claim);
    const id = await verify(tokens.id_token!, "JWT");
    assert.equal(id.picture, TEST_USER.avatar);
    assert.equal(id.owner, undefined);
  });

  it("JWT: owner, name, displayName, email, avatar, id and type in the access token and the ID token", async () => {
    const alice = await server.domain.userAdmin.get(TEST_USER.name);
    const tokens = await passwordTokens(server, { client: JWT_APP, scope: "openid" });
    const verify = await tokenVerifier(server, JWT_APP.clientId);
    const expected = {
      owner: "built-in", name: TEST_USER.name, displayName: TEST_USER.displayName, email: TEST_USER.email,
      avatar: TEST_USER.avatar, id: alice.id, type: "normal-user", sub: alice.id, iss: server.issuer, aud: JWT_APP.clientId,
    };
    for (const [token, typ] of [[tokens.access_token, "at+jwt"], [tokens.id_token!, "JWT"]] as const) {
      const claims = await verify(token, typ);
      for (const [claim, value] of Object.entries(expected)) assert.equal(claims[claim], value, `${typ} ${claim}`);
      assert.equal(typeof claims.exp, "number");
      assert.equal(typeof claims.iat, "number");
    }
  });

  it("JWT: no claim is empty; displayName falls back to the name, a missing email or avatar is left out", async () => {
    const bare = await server.domain.userAdmin.get(BARE.name);
    const tokens = await passwordTokens(server, { client: JWT_APP, user: BARE, scope: "openid" });
    const verify = await tokenVerifier(server, JWT_APP.clientId);
    for (const [token, typ] of [[tokens.access_token, "at+jwt"], [tokens.id_token!, "JWT"]] as const) {
      const claims = await verify(token, typ);
      assert.equal(claims.displayName, BARE.name);
      assert.equal(claims.id, bare.id);
      assert.ok(!("email" in claims) && !("avatar" in claims), `${typ}: left out, never ""`);
      for (const [claim, value] of Object.entries(claims)) assert.notEqual(value, "", `${typ} ${claim}`);
    }
  });

  it("is set and shown by the admin RPC, which refuses an unknown format", async () => {
    const apps = createClient(ApplicationAdminService, createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" }));
    const headers = { authorization: `Bearer ${ADMIN_TOKEN}` };
    const created = await apps.createApplication({ application: { name: "rpc-jwt", tokenFormat: "JWT" } }, { headers });
    assert.equal(created.application?.tokenFormat, "JWT");
    const plain = await apps.createApplication({ application: { name: "rpc-default" } }, { headers });
    assert.equal(plain.application?.tokenFormat, "JWT-Standard");
    const updated = await apps.updateApplication({ application: { name: "rpc-jwt", tokenFormat: "JWT-Standard" } }, { headers });
    assert.equal(updated.application?.tokenFormat, "JWT-Standard");
    const refused = await apps.createApplication({ application: { name: "rpc-bad", tokenFormat: "jwt" } }, { headers }).then(
      () => assert.fail("must be refused"),
      (err: unknown) => ConnectError.from(err),
    );
    assert.equal(refused.code, Code.InvalidArgument);
    assert.match(refused.rawMessage, /tokenFormat: is not one of JWT-Standard, JWT/);
  });

  it("is set by the CLI's --token-format", async () => {
    const database = join(mkdtempSync(join(tmpdir(), "identity-token-format-")), "cli.db");
    const env = {};
    const created = JSON.parse(await runAdminCommand("app", ["create", "--name", "cli-app", "--token-format", "JWT", "--database", database], env));
    assert.equal(created.tokenFormat, "JWT");
    const updated = JSON.parse(await runAdminCommand("app", ["update", "--name", "cli-app", "--token-format", "JWT-Standard", "--database", database], env));
    assert.equal(updated.tokenFormat, "JWT-Standard");
    await assert.rejects(runAdminCommand("app", ["update", "--name", "cli-app", "--token-format", "Opaque", "--database", database], env), /tokenFormat/);
  });
});
