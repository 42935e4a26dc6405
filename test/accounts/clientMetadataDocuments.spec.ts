import assert from "node:assert/strict";
import { cacheSeconds, clientIdUrlProblem, documentMetadata, METADATA_DOCUMENT_BOUNDS } from "../../src/accounts/clientMetadataDocuments.js";
import { OAuthError } from "../../src/oauth/errors.js";

describe("client ID metadata documents: the rules", () => {
  it("keeps a document for its max-age, held to the bounds", () => {
    const { minSeconds, defaultSeconds, maxSeconds } = METADATA_DOCUMENT_BOUNDS;
    assert.equal(cacheSeconds(undefined), defaultSeconds);
    assert.equal(cacheSeconds("public"), defaultSeconds);
    assert.equal(cacheSeconds("max-age=900"), 900);
    assert.equal(cacheSeconds("public, Max-Age=\"1200\""), 1200);
    assert.equal(cacheSeconds("max-age=1"), minSeconds);
    assert.equal(cacheSeconds("max-age=99999999"), maxSeconds);
    assert.equal(cacheSeconds("no-store"), minSeconds);
    assert.equal(cacheSeconds("max-age=900, no-cache"), minSeconds);
  });

  it("takes only https client_id URLs with a path, nothing the draft forbids", () => {
    assert.equal(clientIdUrlProblem("https://agent.example.com/client.json", false), undefined);
    assert.equal(clientIdUrlProblem("https://agent.example.com:8443/c?v=1", false), undefined);
    assert.match(clientIdUrlProblem("http://agent.example.com/client.json", false)!, /https/);
    assert.match(clientIdUrlProblem("http://127.0.0.1:3000/client.json", false)!, /https/);
    assert.equal(clientIdUrlProblem("http://127.0.0.1:3000/client.json", true), undefined, "loopback over http for tests");
    assert.match(clientIdUrlProblem("http://agent.example.com/client.json", true)!, /https/, "but only loopback");
    assert.match(clientIdUrlProblem("https://agent.example.com/", false)!, /path/);
    assert.match(clientIdUrlProblem("https://agent.example.com", false)!, /normalized|path/);
    assert.match(clientIdUrlProblem("https://agent.example.com/a#b", false)!, /fragment/);
    assert.match(clientIdUrlProblem("https://u:p@agent.example.com/a", false)!, /credentials/);
    assert.match(clientIdUrlProblem("https://agent.example.com/a/../b", false)!, /segments/);
    assert.match(clientIdUrlProblem("https://AGENT.example.com/a", false)!, /normalized/);
    assert.match(clientIdUrlProblem(`https://agent.example.com/${"a".repeat(200)}`, false)!, /longer/);
  });

  it("reads a document's metadata under the registration rules, as a public client", () => {
    const url = "https://agent.example.com/client.json";
    const metadata = documentMetadata(url, { client_id: url, redirect_uris: ["https://agent.example.com/cb"], client_name: "Agent" });
    assert.equal(metadata.token_endpoint_auth_method, "none");
    assert.deepEqual(metadata.grant_types, ["authorization_code"]);
    const refusal = (doc: Record<string, unknown>) => {
      try {
        documentMetadata(url, { client_id: url, redirect_uris: ["https://agent.example.com/cb"], ...doc });
      } catch (err) {
        assert.ok(err instanceof OAuthError);
        assert.equal(err.code, "invalid_client");
        return err.description;
      }
      assert.fail("accepted");
    };
    assert.match(refusal({ client_id: "https://agent.example.com/other.json" }), /not the URL/);
    assert.match(refusal({ client_id: undefined }), /missing/);
    assert.match(refusal({ client_secret: "x" }), /client_secret/);
    assert.match(refusal({ token_endpoint_auth_method: "client_secret_post" }), /must be none/);
    assert.match(refusal({ token_endpoint_auth_method: "private_key_jwt" }), /must be none/);
    assert.match(refusal({ grant_types: ["password"] }), /password/);
    assert.match(refusal({ redirect_uris: ["http://agent.example.com/cb"] }), /not loopback/);
  });
});
