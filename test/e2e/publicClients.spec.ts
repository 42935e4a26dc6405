import assert from "node:assert/strict";
import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import * as oauth from "oauth4webapi";
import { ApplicationAdminService } from "../../gen/identity/v1/admin_pb.js";
import type { RunningServer } from "../../src/app/server.js";
import { describeEachDatabase } from "../support/databases.js";
import { authorizeUrl, browse, CookieJar, pkcePair, signIn } from "../support/browserless.js";
import { assertOAuthError, INTROSPECT_PATH, isActive, passwordTokens, refresh, TOKEN_PATH } from "../support/oauth.js";
import { ADMIN_TOKEN, basicAuth, postForm, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

/** A single-page app registered as a public client: no secret, code + PKCE, refresh tokens. */
const SPA = {
  name: "spa",
  clientId: "spa-client",
  publicClient: true,
  redirectUris: ["http://127.0.0.1:5173/callback"],
  refreshExpireInHours: 24,
};
const CONFIDENTIAL = { ...TEST_APP, refreshExpireInHours: 24 };
const loopback = { [oauth.allowInsecureRequests]: true } as const;

/**
 * Public clients (RFC 6749 §2.1; src/oauth/publicClients.ts), driven by
 * oauth4webapi with client authentication None, as an SPA would: sign-in
 * with PKCE, refresh and revocation by client_id alone; no secret, no
 * client_credentials or password grant, no sign-in without PKCE.
 */
describeEachDatabase("public clients", (db) => {
  let server: RunningServer;
  let as: oauth.AuthorizationServer;
  const client: oauth.Client = { client_id: SPA.clientId };

  before(async () => {
    server = await startTestServer({ database: db.url, config: { applications: [CONFIDENTIAL, SPA], users: [TEST_USER] } });
    const issuer = new URL(server.issuer);
    as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: "oidc", ...loopback }));
  });
  after(() => server?.close());

  /** Code + PKCE as the SPA, redeemed with no secret; the token response, checked by oauth4webapi. */
  async function spaSignIn(): Promise<oauth.TokenEndpointResponse> {
    const { verifier, challenge } = pkcePair();
    const state = oauth.generateRandomState();
    const { location } = await signIn(server, {
      client_id: SPA.clientId,
      redirect_uri: SPA.redirectUris[0],
      scope: "openid profile",
      state,
      code_challenge: challenge,
      code_challenge_method: "S256",
    });
    const params = oauth.validateAuthResponse(as, client, location, state);
    const response = await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, SPA.redirectUris[0]!, verifier, loopback);
    return oauth.processAuthorizationCodeResponse(as, client, response);
  }

  it("signs in with code + PKCE and no secret, refreshes and revokes with its client_id alone", async () => {
    const tokens = await spaSignIn();
    assert.equal(oauth.getValidatedIdTokenClaims(tokens)?.aud, SPA.clientId);
    assert.equal(await isActive(server, tokens.access_token), true);
    assert.equal(typeof tokens.refresh_token, "string");

    const refreshed = await oauth.processRefreshTokenResponse(
      as, client, await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, loopback),
    );
    assert.notEqual(refreshed.refresh_token, tokens.refresh_token, "rotated");
    assert.equal(await isActive(server, refreshed.access_token), true);

    for (const token of [refreshed.access_token, refreshed.refresh_token!]) {
      await oauth.processRevocationResponse(await oauth.revocationRequest(as, client, oauth.None(), token, loopback));
    }
    assert.equal(await isActive(server, refreshed.access_token), false);
    assertOAuthError(await refresh(server, refreshed.refresh_token!, {}, { clientId: SPA.clientId, clientSecret: "" }), 400, "invalid_grant");
  });

  it("detects a reused refresh token and ends the whole family, as for a confidential client", async () => {
    const tokens = await spaSignIn();
    const once = await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, loopback);
    const next = await oauth.processRefreshTokenResponse(as, client, once);
    // A stolen copy of the first refresh token (the test server allows no grace window for a retry).
    const replay = await postForm(server.url + TOKEN_PATH, { grant_type: "refresh_token", refresh_token: tokens.refresh_token!, client_id: SPA.clientId });
    assertOAuthError(replay, 400, "invalid_grant");
    assert.equal(await isActive(server, next.access_token), false, "the family's live access token ends with it");
  });

  it("lets exactly one of 20 parallel refreshes with one refresh token win", async () => {
    const tokens = await spaSignIn();
    const form = { grant_type: "refresh_token", refresh_token: tokens.refresh_token!, client_id: SPA.clientId };
    const answers = await Promise.all(Array.from({ length: 20 }, () => postForm(server.url + TOKEN_PATH, form)));
    assert.equal(answers.filter((res) => res.status === 200).length, 1, answers.map((res) => res.status).join(" "));
    assert.ok(answers.every((res) => res.status === 200 || res.body.error === "invalid_grant"));
  });

  it("must use PKCE: an authorization request without a code_challenge is refused at the redirect URI", async () => {
    const page = await browse(authorizeUrl(server.url, { client_id: SPA.clientId, redirect_uri: SPA.redirectUris[0] }), new CookieJar());
    assert.ok([302, 303].includes(page.status), String(page.status));
    const location = new URL(page.headers.get("location")!);
    assert.equal(location.origin + location.pathname, SPA.redirectUris[0]);
    assert.equal(location.searchParams.get("error"), "invalid_request");
    assert.match(location.searchParams.get("error_description") ?? "", /PKCE/);
  });

  it("has no secret: any secret fails, and client_credentials, password and introspection are refused", async () => {
    const asSpa = (secret: string) => ({ authorization: basicAuth(SPA.clientId, secret) });
    assertOAuthError(await postForm(server.url + TOKEN_PATH, { grant_type: "client_credentials" }, asSpa("guess")), 401, "invalid_client");
    assertOAuthError(await postForm(server.url + TOKEN_PATH, { grant_type: "client_credentials", client_id: SPA.clientId }), 401, "invalid_client");
    const password = { grant_type: "password", username: TEST_USER.name, password: TEST_USER.password, client_id: SPA.clientId };
    assertOAuthError(await postForm(server.url + TOKEN_PATH, password), 401, "invalid_client");
    const { access_token } = await spaSignIn();
    assertOAuthError(await postForm(server.url + INTROSPECT_PATH, { token: access_token, client_id: SPA.clientId }), 401, "invalid_client");
  });

  it("leaves confidential clients as they were: no refresh without their secret", async () => {
    const tokens = await passwordTokens(server, { client: CONFIDENTIAL });
    assertOAuthError(await refresh(server, tokens.refresh_token!, {}, { clientId: CONFIDENTIAL.clientId, clientSecret: "" }), 401, "invalid_client");
    assert.equal((await refresh(server, tokens.refresh_token!, {}, CONFIDENTIAL)).status, 200);
  });

  describe("registration (admin RPC)", () => {
    let apps: Client<typeof ApplicationAdminService>;
    const admin = { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } };
    const code = (call: Promise<unknown>) => call.then(() => assert.fail("the call must be refused"), (err: unknown) => ConnectError.from(err).code);
    const clientCredentials = (clientId: string, secret: string) =>
      postForm(server.url + TOKEN_PATH, { grant_type: "client_credentials" }, { authorization: basicAuth(clientId, secret) });

    before(() => (apps = createClient(ApplicationAdminService, createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" }))));

    it("creates a public client without a secret, and refuses one with a secret or a secret-only grant", async () => {
      const name = `pub-${Date.now()}`;
      const created = await apps.createApplication({ application: { name, publicClient: true, redirectUris: SPA.redirectUris } }, admin);
      assert.equal(created.clientSecret, "");
      assert.equal(created.application?.publicClient, true);
      assert.equal((await apps.getApplication({ name }, admin)).application?.publicClient, true);
      assert.equal(await code(apps.createApplication({ application: { name: `${name}-s`, publicClient: true, clientSecret: "a-chosen-secret-long-enough" } }, admin)), Code.InvalidArgument);
      for (const grant of ["client_credentials", "password"]) {
        assert.equal(await code(apps.createApplication({ application: { name: `${name}-g`, publicClient: true, grantTypes: [grant] } }, admin)), Code.InvalidArgument, grant);
      }
      assert.equal(await code(apps.rotateApplicationSecret({ name }, admin)), Code.InvalidArgument);
    });

    it("turning an application public ends its secret and its refresh tokens at once; turning it back gives a new secret, returned once", async () => {
      const name = `conf-${Date.now()}`;
      const created = await apps.createApplication({ application: { name, grantTypes: ["client_credentials", "password"], refreshExpireInHours: 24 } }, admin);
      const clientId = created.application!.clientId;
      assert.equal((await clientCredentials(clientId, created.clientSecret)).status, 200);
      const issued = await passwordTokens(server, { client: { clientId, clientSecret: created.clientSecret } });
      // Its secret-only grants must go first: a public client cannot keep them.
      const refused = await code(apps.updateApplication({ application: { name, publicClient: true } }, admin));
      assert.equal(refused, Code.InvalidArgument);
      const madePublic = await apps.updateApplication({ application: { name, publicClient: true, grantTypes: ["authorization_code"], replaceLists: true } }, admin);
      assert.equal(madePublic.clientSecret, "");
      assert.equal((await clientCredentials(clientId, created.clientSecret)).status, 401, "the old secret stopped working");
      // Issued to a client that proved itself at each refresh, its refresh tokens would now need no secret: they end.
      assertOAuthError(await refresh(server, issued.refresh_token!, {}, { clientId, clientSecret: "" }), 400, "invalid_grant");
      assert.equal(await isActive(server, issued.access_token), true, "access tokens, which no secret ever guarded, stay");
      const madeConfidential = await apps.updateApplication({ application: { name, publicClient: false, grantTypes: ["client_credentials"] } }, admin);
      assert.ok(madeConfidential.clientSecret.length >= 43, "a generated secret, returned once");
      assert.equal((await clientCredentials(clientId, madeConfidential.clientSecret)).status, 200);
      assert.equal((await clientCredentials(clientId, created.clientSecret)).status, 401);
    });
  });
});
