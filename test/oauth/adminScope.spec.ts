import assert from "node:assert/strict";
import { ADMIN_SCOPE, CONSOLE_CLIENT_ID, grantableScopes, parseScope } from "../../src/oauth/scopes.js";

describe("the admin scope's grant rule", () => {
  const admin = { isAdmin: true };
  const member = { isAdmin: false };

  it("is a scope the service knows, so a request for it is not dropped as unknown", () => {
    assert.deepEqual(parseScope(`openid ${ADMIN_SCOPE} read`), ["openid", ADMIN_SCOPE]);
  });

  it("is kept only for an admin user at the console's application", () => {
    assert.deepEqual(grantableScopes(["openid", "profile", ADMIN_SCOPE], CONSOLE_CLIENT_ID, admin), ["openid", "profile", ADMIN_SCOPE]);
    assert.deepEqual(grantableScopes(["openid", "profile", ADMIN_SCOPE], CONSOLE_CLIENT_ID, member), ["openid", "profile"]);
    assert.deepEqual(grantableScopes(["openid", ADMIN_SCOPE], "another-client", admin), ["openid"]);
    assert.deepEqual(grantableScopes(["openid", ADMIN_SCOPE], CONSOLE_CLIENT_ID, undefined), ["openid"], "a client's own token");
  });

  it("leaves openid when nothing else was asked, and other scopes untouched", () => {
    assert.deepEqual(grantableScopes([ADMIN_SCOPE], "another-client", admin), ["openid"]);
    assert.deepEqual(grantableScopes(["email", "phone"], "another-client", member), ["email", "phone"]);
  });
});
