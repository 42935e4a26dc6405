import assert from "node:assert/strict";
import * as oauth from "oauth4webapi";
import type { RunningServer } from "../../src/app/server.js";
import { startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

/** A strict, spec-following client library, configured only from our discovery document. */
describe("oauth4webapi against the server", () => {
  let server: RunningServer;
  let as: oauth.AuthorizationServer;
  const client: oauth.Client = { client_id: TEST_APP.clientId };
  const auth = oauth.ClientSecretBasic(TEST_APP.clientSecret);
  // oauth4webapi refuses plain http unless told; the server runs on loopback here, nowhere else.
  const loopback = { [oauth.allowInsecureRequests]: true } as const;

  before(async () => {
    server = await startTestServer();
    const issuer = new URL(server.issuer);
    as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: "oidc", ...loopback }));
  });
  after(() => server.close());

  it("reads a discovery document that names our real endpoints", () => {
    assert.equal(as.issuer, server.issuer);
    assert.equal(as.token_endpoint, `${server.issuer}/api/login/oauth/access_token`);
    assert.equal(as.introspection_endpoint, `${server.issuer}/api/login/oauth/introspect`);
    assert.equal(as.jwks_uri, `${server.issuer}/.well-known/jwks`);
    assert.ok(as.grant_types_supported?.includes("password") && as.grant_types_supported.includes("client_credentials"));
  });

  /** RFC 9068 validation of an access token, with signature checked against jwks_uri. */
  async function validateAccessToken(token: string): Promise<oauth.JWTAccessTokenClaims> {
    const request = new Request("https://resource.example/", { headers: { authorization: `Bearer ${token}` } });
    return oauth.validateJwtAccessToken(as, request, TEST_APP.clientId, loopback);
  }

  it("completes client_credentials, and the token passes RFC 9068 validation", async () => {
    const response = await oauth.clientCredentialsGrantRequest(as, client, auth, { scope: "openid" }, loopback);
    const tokens = await oauth.processClientCredentialsResponse(as, client, response);
    assert.equal(tokens.token_type, "bearer"); // oauth4webapi lower-cases it
    assert.equal(tokens.expires_in, 3600);
    assert.equal(tokens.refresh_token, undefined);
    assert.equal(tokens.id_token, undefined);
    const claims = await validateAccessToken(tokens.access_token);
    assert.equal(claims.sub, TEST_APP.clientId);
    assert.equal(claims.client_id, TEST_APP.clientId);
  });

  it("completes the password grant, validating the ID token", async () => {
    const response = await oauth.genericTokenEndpointRequest(
      as, client, auth, "password", { username: TEST_USER.name, password: TEST_USER.password, scope: "openid profile" }, loopback,
    );
    const tokens = await oauth.processGenericTokenEndpointResponse(as, client, response);
    const id = oauth.getValidatedIdTokenClaims(tokens);
    assert.ok(id);
    assert.equal(id.name, TEST_USER.displayName);
    assert.equal(typeof tokens.refresh_token, "string");
    const claims = await validateAccessToken(tokens.access_token);
    assert.equal(claims.sub, id.sub);
    assert.equal(claims.preferred_username, TEST_USER.name);

    const introspected = await oauth.processIntrospectionResponse(
      as, client, await oauth.introspectionRequest(as, client, auth, tokens.access_token, loopback),
    );
    assert.equal(introspected.active, true);
    assert.equal(introspected.sub, id.sub);
    assert.equal(introspected.username, TEST_USER.name);
    assert.equal(introspected.client_id, TEST_APP.clientId);
    assert.equal(introspected.jti, claims.jti);
    assert.equal(introspected.exp, claims.exp);
  });

  it("introspects an unknown token as inactive", async () => {
    const response = await oauth.introspectionRequest(as, client, auth, "not-a-token", loopback);
    assert.deepEqual(await oauth.processIntrospectionResponse(as, client, response), { active: false });
  });

  it("sees a bad client secret as a Basic challenge with an invalid_client body", async () => {
    const response = await oauth.clientCredentialsGrantRequest(as, client, oauth.ClientSecretBasic("wrong"), {}, loopback);
    // oauth4webapi reports a WWW-Authenticate challenge ahead of the body.
    const err = await oauth.processClientCredentialsResponse(as, client, response).then(
      () => assert.fail("must be refused"),
      (e: unknown) => e,
    );
    assert.ok(err instanceof oauth.WWWAuthenticateChallengeError);
    assert.equal(err.status, 401);
    assert.deepEqual(err.cause.map((c) => c.scheme), ["basic"]);
    assert.equal(((await err.response.json()) as { error: string }).error, "invalid_client");
  });

  it("sees an unknown grant type as an RFC 6749 error response", async () => {
    const response = await oauth.genericTokenEndpointRequest(as, client, auth, "urn:example:unknown", {}, loopback);
    await assert.rejects(oauth.processGenericTokenEndpointResponse(as, client, response), (err: unknown) => {
      assert.ok(err instanceof oauth.ResponseBodyError);
      assert.equal(err.status, 400);
      assert.equal(err.error, "unsupported_grant_type");
      return true;
    });
  });
});
