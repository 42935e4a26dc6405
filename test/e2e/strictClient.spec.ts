import assert from "node:assert/strict";
import * as oidc from "openid-client";
import type { RunningServer } from "../../src/app/server.js";
import { browse, CookieJar, loginFormFields, submit } from "../support/browserless.js";
import { startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

const CALLBACK = TEST_APP.redirectUris[0]!;

/**
 * openid-client, a certified strict relying party, runs the code + PKCE flow
 * from our discovery document. It checks `iss` on the redirect (RFC 9207),
 * state, the ID token's signature and claims, and the nonce.
 */
describe("code + PKCE with a strict client (openid-client)", () => {
  let server: RunningServer;
  let jar: CookieJar;
  before(async () => {
    server = await startTestServer();
    jar = new CookieJar();
  });
  after(() => server.close());

  const discover = (auth: oidc.ClientAuth) =>
    oidc.discovery(new URL(server.issuer), TEST_APP.clientId, undefined, auth, { execute: [oidc.allowInsecureRequests] });

  /** Run the browser part: the login form on the first visit, the session afterwards. Returns the callback URL. */
  async function authorizeInBrowser(url: URL): Promise<URL> {
    let res = await browse(url.href, jar);
    if (res.status === 200) {
      const fields = { ...loginFormFields(await res.text()), username: TEST_USER.name, password: TEST_USER.password };
      res = await submit(new URL("/login", url).href, fields, jar);
    }
    assert.equal(res.status, 303);
    return new URL(res.headers.get("location")!);
  }

  async function start(config: oidc.Configuration) {
    const verifier = oidc.randomPKCECodeVerifier();
    const checks = { pkceCodeVerifier: verifier, expectedState: oidc.randomState(), expectedNonce: oidc.randomNonce() };
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: CALLBACK,
      scope: "openid profile email",
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
      state: checks.expectedState,
      nonce: checks.expectedNonce,
    });
    return { checks, callback: await authorizeInBrowser(url) };
  }

  it("completes the flow as a public client and validates the ID token", async () => {
    const config = await discover(oidc.None());
    assert.equal(config.serverMetadata().authorization_response_iss_parameter_supported, true);
    const { checks, callback } = await start(config);
    const tokens = await oidc.authorizationCodeGrant(config, callback, { ...checks, idTokenExpected: true });
    const claims = tokens.claims()!;
    assert.equal(claims.iss, server.issuer);
    assert.equal(claims.aud, TEST_APP.clientId);
    assert.equal(claims.nonce, checks.expectedNonce);
    assert.equal(claims.preferred_username, TEST_USER.name);
    assert.equal(claims.email, TEST_USER.email);
    assert.equal(tokens.token_type, "bearer");
    assert.ok(tokens.refresh_token);
  });

  it("completes the flow as a confidential client with Basic authentication", async () => {
    const config = await discover(oidc.ClientSecretBasic(TEST_APP.clientSecret));
    const { checks, callback } = await start(config);
    const tokens = await oidc.authorizationCodeGrant(config, callback, { ...checks, idTokenExpected: true });
    assert.equal(tokens.claims()!.sub, (await server.domain.userAdmin.get(TEST_USER.name)).id);
  });

  // openid-client wraps the check that failed as the error's cause.
  const rejectsOn = (attempt: Promise<unknown>, check: RegExp) =>
    assert.rejects(attempt, (err: Error & { cause?: Error }) => check.test(`${err.message} ${err.cause?.message ?? ""}`));

  it("would reject a redirect from another issuer, a foreign state or a wrong nonce", async () => {
    const config = await discover(oidc.None());

    const mixUp = await start(config);
    mixUp.callback.searchParams.set("iss", "https://attacker.example");
    await rejectsOn(oidc.authorizationCodeGrant(config, mixUp.callback, mixUp.checks), /"iss"/);

    const csrf = await start(config);
    await rejectsOn(oidc.authorizationCodeGrant(config, csrf.callback, { ...csrf.checks, expectedState: oidc.randomState() }), /"state"/);

    const replayedIdToken = await start(config);
    const wrongNonce = { ...replayedIdToken.checks, expectedNonce: oidc.randomNonce() };
    await rejectsOn(oidc.authorizationCodeGrant(config, replayedIdToken.callback, wrongNonce), /"nonce"/);
  });
});
