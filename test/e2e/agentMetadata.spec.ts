import assert from "node:assert/strict";
import type { RunningServer } from "../../src/app/server.js";
import { getJson, passwordTokens } from "../support/oauth.js";
import { startTestServer } from "../support/server.js";

/** Issue 43 §5: the metadata agents read, RFC 8414 and RFC 9728. */
describe("metadata for agents: RFC 8414 and RFC 9728", () => {
  let server: RunningServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.close());

  it("serves RFC 8414 metadata with the same values as OIDC discovery, S256 among them", async () => {
    const oidc = await getJson(`${server.url}/.well-known/openid-configuration`);
    const oauth = await getJson(`${server.url}/.well-known/oauth-authorization-server`);
    assert.equal(oauth.status, 200);
    assert.deepEqual(oauth.body, oidc.body);
    assert.equal(oauth.body.issuer, server.issuer);
    assert.deepEqual(oauth.body.code_challenge_methods_supported, ["S256"]);
    // Registration is off by default, so neither is advertised.
    assert.equal(oauth.body.registration_endpoint, undefined);
    assert.equal(oauth.body.client_id_metadata_document_supported, undefined);
  });

  it("serves RFC 9728 metadata of its own APIs", async () => {
    const res = await getJson(`${server.url}/.well-known/oauth-protected-resource`);
    assert.equal(res.status, 200);
    assert.equal(res.body.resource, server.issuer);
    assert.deepEqual(res.body.authorization_servers, [server.issuer]);
    assert.deepEqual(res.body.bearer_methods_supported, ["header"]);
    assert.ok(res.body.scopes_supported.includes("openid"));
  });

  it("names the metadata in the Bearer challenges of userinfo and get-account (RFC 9728 §5.1)", async () => {
    const metadata = `resource_metadata="${server.issuer}/.well-known/oauth-protected-resource"`;
    for (const path of ["/api/userinfo", "/api/get-account"]) {
      const anonymous = await getJson(server.url + path);
      assert.equal(anonymous.status, 401, path);
      const challenge = anonymous.headers.get("www-authenticate") ?? "";
      assert.match(challenge, /^Bearer realm="identity"/, path);
      assert.ok(challenge.endsWith(`, ${metadata}`), challenge);
      const bad = await getJson(server.url + path, { authorization: "Bearer not-a-token-of-ours" });
      assert.equal(bad.status, 401, path);
      assert.match(bad.headers.get("www-authenticate") ?? "", new RegExp(`^Bearer realm="identity", error="invalid_token", error_description="[^"]*", ${metadata.replace(/[./]/g, "\\$&")}$`), path);
    }
    // A good token still works.
    const { access_token } = await passwordTokens(server);
    assert.equal((await getJson(`${server.url}/api/userinfo`, { authorization: `Bearer ${access_token}` })).status, 200);
  });
});
