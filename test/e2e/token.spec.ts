import assert from "node:assert/strict";
import type { RunningServer } from "../../src/server.js";
import { basicAuth, postForm, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

describe("token endpoint over REST", () => {
  let server: RunningServer;
  before(async () => (server = await startTestServer()));
  after(() => server.close());

  it("issues password-grant tokens that introspect as active", async () => {
    const token = await postForm(`${server.url}/api/login/oauth/access_token`, {
      grant_type: "password",
      client_id: TEST_APP.clientId,
      client_secret: TEST_APP.clientSecret,
      username: TEST_USER.name,
      password: TEST_USER.password,
    });
    assert.equal(token.status, 200);
    assert.equal(token.body.token_type, "Bearer");
    assert.equal(token.body.scope, "openid");
    assert.equal(token.body.expires_in, 3600);
    assert.ok(token.body.id_token && token.body.id_token !== token.body.access_token);
    const introspection = await postForm(
      `${server.url}/api/login/oauth/introspect`,
      { token: token.body.access_token, token_type_hint: "access_token" },
      { authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret) },
    );
    assert.equal(introspection.status, 200);
    assert.equal(introspection.body.active, true);
    assert.equal(introspection.body.username, TEST_USER.name);
  });
});
