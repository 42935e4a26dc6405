import assert from "node:assert/strict";
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify, type JWK } from "jose";
import * as oidc from "openid-client";
import type { RunningServer } from "../../src/app/server.js";
import { authorizeUrl, browse, CookieJar, loginFormFields, pkcePair, submit } from "../support/browserless.js";
import { BACKCHANNEL_LOGOUT_EVENT, LogoutReceiver, type ReceivedLogout } from "../support/logoutTokens.js";
import { call } from "../support/oauth.js";
import { basicAuth, postForm, startTestServer, TEST_USER } from "../support/server.js";

/**
 * The checks of the OpenID Foundation conformance suite's "OpenID Connect
 * Core: Back-Channel Logout OP" plan
 * (oidcc-backchannel-rp-initiated-logout-certification-test-plan: modules
 * oidcc-backchannel-logout-discovery-endpoint-verification and
 * oidcc-backchannel-rp-initiated-logout, client_secret_basic), reproduced
 * here: the suite needs Java and Docker. As the suite does, the relying
 * party signs in with the code flow (state of 128 characters), sends the
 * browser to the end_session_endpoint with id_token_hint,
 * post_logout_redirect_uri and state, checks the logout token its
 * backchannel_logout_uri receives and the redirect, then asks with
 * prompt=none, which must need the user again. The relying party is this
 * file's own receiver (test/support/logoutTokens.ts), which records each
 * POST as sent and accepts it: the checks are the tests'.
 */
const CALLBACK = "http://127.0.0.1:9999/rp";
const SECRET = "secret-of-the-conformance-rp-0123";

describe("OpenID Connect Back-Channel Logout 1.0 conformance (Back-Channel OP plan)", function () {
  this.timeout(60_000);
  const receiver = new LogoutReceiver();
  let server: RunningServer;
  let keys: ReturnType<typeof createLocalJWKSet>;
  let published: JWK[];
  const rps = [
    { clientId: "bcl-rs256", signingAlg: "RS256" },
    { clientId: "bcl-es256", signingAlg: "ES256" },
  ];

  before(async () => {
    await receiver.start();
    // The receiver takes every POST; what a relying party must check of it is asserted below.
    receiver.verify = async (token) => decodeJwt(token) as never;
    const applications = rps.map((rp) => ({
      name: rp.clientId, clientId: rp.clientId, clientSecret: SECRET, signingAlg: rp.signingAlg, redirectUris: [CALLBACK],
      grantTypes: ["authorization_code"], backchannelLogoutUri: receiver.url(`/${rp.clientId}`), backchannelLogoutSessionRequired: true,
    }));
    server = await startTestServer({ config: { applications, users: [TEST_USER] }, backchannelLogout: { pollMs: 50 } });
  });
  beforeEach(() => receiver.clear());
  after(async () => {
    await server?.close();
    await receiver.close();
  });

  describe("oidcc-backchannel-logout-discovery-endpoint-verification", () => {
    it("says backchannel_logout_supported and backchannel_logout_session_supported, and names the end_session_endpoint", async () => {
      const doc = (await call(`${server.url}/.well-known/openid-configuration`)).body;
      assert.equal(doc.backchannel_logout_supported, true, "OIDCBCL-2.1");
      assert.equal(doc.backchannel_logout_session_supported, true, "the certification asks for sid");
      assert.equal(new URL(doc.end_session_endpoint).href, `${server.issuer}/api/logout`, "OIDCRIL-2.1");
    });
  });

  describe("oidcc-backchannel-rp-initiated-logout", () => {
    /** The code flow as the suite runs it (client_secret_basic, a 128-character state): the ID token and the browser. */
    async function signIn(clientId: string): Promise<{ idToken: string; jar: CookieJar }> {
      const jar = new CookieJar();
      const state = "s".repeat(128);
      const { verifier, challenge } = pkcePair();
      const params = { client_id: clientId, redirect_uri: CALLBACK, scope: "openid", state, nonce: "n-1", code_challenge: challenge, code_challenge_method: "S256" };
      const page = await browse(authorizeUrl(server.url, params), jar);
      const res = await submit(`${server.url}/login`, { ...loginFormFields(await page.text()), username: TEST_USER.name, password: TEST_USER.password }, jar);
      const location = new URL(res.headers.get("location")!);
      assert.equal(location.searchParams.get("state"), state, "the long state comes back intact");
      const tokens = await postForm(`${server.url}/api/login/oauth/access_token`, {
        grant_type: "authorization_code", code: location.searchParams.get("code")!, redirect_uri: CALLBACK, code_verifier: verifier,
      }, { authorization: basicAuth(clientId, SECRET) });
      assert.equal(tokens.status, 200, tokens.text);
      return { idToken: tokens.body.id_token, jar };
    }

    /** The end_session_endpoint request of CreateEndSessionEndpointRequest: id_token_hint, post_logout_redirect_uri, state. */
    const endSession = (idToken: string, jar: CookieJar, state: string) =>
      browse(`${server.url}/api/logout?${new URLSearchParams({ id_token_hint: idToken, post_logout_redirect_uri: CALLBACK, state })}`, jar);

    async function loggedOut(clientId: string): Promise<{ idToken: string; jar: CookieJar; received: ReceivedLogout; redirect: URL; state: string }> {
      const { idToken, jar } = await signIn(clientId);
      const state = "e~".repeat(25);
      receiver.clear();
      const res = await endSession(idToken, jar, state);
      assert.ok([302, 303].includes(res.status), `the browser is sent to the post_logout_redirect_uri: ${res.status}`);
      const [received] = await receiver.accepted(1);
      return { idToken, jar, received: received!, redirect: new URL(res.headers.get("location")!), state };
    }

    for (const rp of rps) {
      describe(`a relying party whose ID tokens are ${rp.signingAlg}`, () => {
        let outcome: Awaited<ReturnType<typeof loggedOut>>;
        before(async () => {
          outcome = await loggedOut(rp.clientId);
          const jwks = (await call(`${server.url}/.well-known/jwks`)).body as { keys: JWK[] };
          published = jwks.keys;
          keys = createLocalJWKSet(jwks);
        });

        it("POSTs to the backchannel_logout_uri a form with logout_token alone (OIDCBCL-2.5, CheckForUnexpectedParametersInBackchannelLogoutRequest)", () => {
          const { received } = outcome;
          assert.equal(received.path, `/${rp.clientId}`);
          assert.equal(received.method, "POST");
          assert.match(received.contentType!, /^application\/x-www-form-urlencoded/);
          assert.deepEqual(Object.keys(received.fields!), ["logout_token"]);
        });

        it(`signs the logout token as the ID token: ${rp.signingAlg}, a published key named by kid, typ logout+jwt (ValidateLogoutTokenSignature, OIDCBCL-2.4)`, async () => {
          const header = decodeProtectedHeader(outcome.received.token);
          assert.equal(header.alg, rp.signingAlg, "the relying party's id_token_signed_response_alg");
          assert.equal(header.alg, decodeProtectedHeader(outcome.idToken).alg);
          assert.equal(header.typ, "logout+jwt", "§2.4 recommends explicit typing");
          const key = published.find((k) => k.kid === header.kid);
          assert.ok(key, "the kid names a published key");
          assert.equal(key.use, "sig");
          assert.equal(key.alg, rp.signingAlg);
          await jwtVerify(outcome.received.token, keys, { algorithms: [rp.signingAlg], typ: "logout+jwt" });
        });

        it("fills iss, aud, iat, jti and the one backchannel-logout event with {} (ValidateLogoutTokenClaims)", () => {
          const claims = decodeJwt(outcome.received.token);
          assert.equal(claims.iss, server.issuer);
          assert.ok(claims.aud === rp.clientId || (Array.isArray(claims.aud) && claims.aud.includes(rp.clientId)));
          const nowSeconds = Date.now() / 1000;
          assert.ok(typeof claims.iat === "number" && claims.iat <= nowSeconds + 300 && claims.iat > nowSeconds - 86_400, "iat: not ahead, not a day old");
          assert.ok(typeof claims.exp === "number" && claims.exp > claims.iat!, "exp after iat");
          assert.equal(typeof claims.jti, "string");
          assert.ok((claims.jti as string).length > 0);
          assert.deepEqual(claims.events, { [BACKCHANNEL_LOGOUT_EVENT]: {} }, "exactly one member, the event's URI, whose value is {}");
        });

        it("names the ID token's sub and sid, and carries no nonce (CheckIdTokenSubMatchesLogoutToken, CheckIdTokenSidMatchesLogoutToken, CheckLogoutTokenNoNonce)", () => {
          const claims = decodeJwt(outcome.received.token);
          const id = decodeJwt(outcome.idToken);
          assert.equal(typeof id.sid, "string", "the ID token carries sid (backchannel_logout_session_supported)");
          assert.equal(claims.sub, id.sub);
          assert.equal(claims.sid, id.sid);
          assert.equal("nonce" in claims, false);
          assert.ok(id.nonce, "the ID token had one");
        });

        it("sends the browser to the post_logout_redirect_uri with the state alone (CheckPostLogoutState, CheckForUnexpectedParametersInPostLogoutRedirect)", () => {
          const { redirect, state } = outcome;
          assert.equal(`${redirect.origin}${redirect.pathname}`, CALLBACK);
          assert.deepEqual([...redirect.searchParams], [["state", state]]);
        });

        it("then answers prompt=none with login_required: the user is signed out (CheckErrorFromAuthorizationEndpointIsOneThatRequiredAUserInterface)", async () => {
          const state = "p".repeat(128);
          const res = await browse(authorizeUrl(server.url, { client_id: rp.clientId, redirect_uri: CALLBACK, prompt: "none", state, code_challenge: pkcePair().challenge, code_challenge_method: "S256" }), outcome.jar);
          const location = new URL(res.headers.get("location")!);
          assert.ok(["login_required", "interaction_required", "consent_required", "account_selection_required"].includes(location.searchParams.get("error")!));
          assert.equal(location.searchParams.get("state"), state);
          assert.equal(location.searchParams.get("iss"), server.issuer);
        });

        it("posts once: no retry after the relying party answered 200 (OIDCBCL-2.8)", async () => {
          await new Promise((resolve) => setTimeout(resolve, 200));
          assert.equal(receiver.received.length, 0, "nothing more after the first delivery");
        });
      });
    }

    it("lets openid-client build the end_session request and follows its redirect to the post_logout_redirect_uri", async () => {
      const { idToken, jar } = await signIn(rps[0]!.clientId);
      const config = await oidc.discovery(new URL(server.issuer), rps[0]!.clientId, undefined, oidc.ClientSecretBasic(SECRET), { execute: [oidc.allowInsecureRequests] });
      const endSessionUrl = oidc.buildEndSessionUrl(config, { id_token_hint: idToken, post_logout_redirect_uri: CALLBACK, state: "oc" });
      const res = await browse(endSessionUrl.href, jar);
      assert.equal(new URL(res.headers.get("location")!).searchParams.get("state"), "oc");
      const [received] = await receiver.accepted(1);
      assert.equal(decodeJwt(received!.token).sid, decodeJwt(idToken).sid);
    });
  });
});
