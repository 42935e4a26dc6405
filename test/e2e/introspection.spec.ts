import assert from "node:assert/strict";
import { decodeJwt, decodeProtectedHeader, generateKeyPair, SignJWT } from "jose";
import type { RunningServer } from "../../src/app/server.js";
import { FakeClock } from "../support/clock.js";
import { assertOAuthError, INTROSPECT_PATH, TOKEN_PATH, type HttpResult } from "../support/oauth.js";
import { basicAuth, postForm, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

describe("introspection over REST", () => {
  let server: RunningServer;
  let clientToken: string;
  let userToken: string;
  const clock = new FakeClock();
  const basic = { authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret) };

  before(async () => {
    server = await startTestServer({ clock });
    const issue = (params: Record<string, string>) => postForm(server.url + TOKEN_PATH, params, basic);
    clientToken = (await issue({ grant_type: "client_credentials", scope: "openid email" })).body.access_token;
    userToken = (await issue({ grant_type: "password", username: TEST_USER.name, password: TEST_USER.password })).body.access_token;
  });
  after(() => server.close());

  const introspect = (token: string, headers: Record<string, string> = basic) =>
    postForm(server.url + INTROSPECT_PATH, { token, token_type_hint: "access_token" }, headers);

  function assertInactive(res: HttpResult): void {
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { active: false });
    assert.equal(res.headers.get("cache-control"), "no-store");
  }

  it("describes a user's token exactly as it was issued", async () => {
    const claims = decodeJwt(userToken);
    const res = await introspect(userToken);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("cache-control"), "no-store");
    assert.deepEqual(res.body, {
      active: true,
      client_id: TEST_APP.clientId,
      username: TEST_USER.name,
      token_type: "Bearer",
      exp: claims.exp,
      iat: claims.iat,
      nbf: claims.nbf,
      sub: (await server.domain.userAdmin.get(TEST_USER.name)).id,
      aud: [TEST_APP.clientId],
      iss: server.issuer,
      scope: "openid",
      jti: claims.jti,
      // How the user signed in (issue #46): a password grant's password.
      auth_time: claims.auth_time,
      acr: "pwd",
      amr: ["pwd"],
    });
  });

  it("describes an application's token with the client as subject and no username", async () => {
    const claims = decodeJwt(clientToken);
    const res = await introspect(clientToken);
    assert.deepEqual(res.body, {
      active: true,
      client_id: TEST_APP.clientId,
      token_type: "Bearer",
      exp: claims.exp,
      iat: claims.iat,
      nbf: claims.nbf,
      sub: TEST_APP.clientId,
      aud: [TEST_APP.clientId],
      iss: server.issuer,
      scope: "openid email",
      jti: claims.jti,
    });
  });

  it("describes each token by its own claims when tokens are introspected again, together and in any order", async () => {
    const tokens = [userToken, clientToken, userToken, clientToken, clientToken, userToken];
    const answers = await Promise.all(tokens.map((token) => introspect(token)));
    answers.forEach((res, i) => {
      const claims = decodeJwt(tokens[i]!);
      assert.equal(res.body.active, true);
      assert.equal(res.body.jti, claims.jti);
      assert.equal(res.body.sub, claims.sub);
      assert.equal(res.body.username, claims.preferred_username);
    });
  });

  it("accepts client credentials in the form body too (client_secret_post)", async () => {
    const res = await postForm(server.url + INTROSPECT_PATH, { token: clientToken, client_id: TEST_APP.clientId, client_secret: TEST_APP.clientSecret });
    assert.equal(res.body.active, true);
  });

  it("answers exactly {active:false} for unknown and malformed tokens", async () => {
    const forged = userToken.slice(0, -4) + (userToken.endsWith("AAAA") ? "BBBB" : "AAAA");
    for (const token of ["", "not-a-jwt", "a.b", "a.b.c", forged, `${userToken}.x`, "x".repeat(20_000)]) {
      assertInactive(await introspect(token));
    }
  });

  it("answers {active:false} for a token signed by someone else with our header and claims", async () => {
    const { privateKey } = await generateKeyPair("RS256");
    const header = decodeProtectedHeader(userToken);
    const copy = await new SignJWT(decodeJwt(userToken)).setProtectedHeader({ ...header, alg: "RS256" }).sign(privateKey);
    assertInactive(await introspect(copy));
    const unsigned = [Buffer.from(JSON.stringify({ alg: "none", typ: "at+jwt" })).toString("base64url"), userToken.split(".")[1], ""].join(".");
    assertInactive(await introspect(unsigned));
  });

  it("answers {active:false} for a refresh token", async () => {
    const res = await postForm(server.url + TOKEN_PATH, { grant_type: "password", username: TEST_USER.name, password: TEST_USER.password }, basic);
    assertInactive(await introspect(res.body.refresh_token));
  });

  it("refuses bad client credentials with 401 invalid_client, whatever the token", async () => {
    assertOAuthError(await introspect(userToken, { authorization: basicAuth(TEST_APP.clientId, "wrong") }), 401, "invalid_client");
    assertOAuthError(await introspect(userToken, { authorization: basicAuth("nobody", "x") }), 401, "invalid_client");
    assertOAuthError(await introspect(userToken, {}), 401, "invalid_client");
    assertOAuthError(await introspect("junk", { authorization: "Basic ***" }), 401, "invalid_client");
  });

  // Keep last: it moves the shared clock past every token's expiry.
  it("turns inactive exactly when the token expires (injected clock)", async () => {
    const token = (await postForm(server.url + TOKEN_PATH, { grant_type: "client_credentials" }, basic)).body.access_token;
    clock.advanceSeconds(3599);
    assert.equal((await introspect(token)).body.active, true);
    clock.advanceSeconds(1);
    assertInactive(await introspect(token));
  });
});
