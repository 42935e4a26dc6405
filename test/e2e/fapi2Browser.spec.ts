import assert from "node:assert/strict";
import { calculateJwkThumbprint, decodeJwt, exportJWK } from "jose";
import * as oidc from "openid-client";
import type { RunningServer } from "../../src/app/server.js";
import { startCallbackServer, type CallbackServer } from "../support/callbackServer.js";
import { useChromium } from "../support/chromium.js";
import { clientKey, discover, type ClientKey } from "../support/highAssurance.js";
import { startTestServer, TEST_USER } from "../support/server.js";

/**
 * Issue 45 §7, the proof: a whole sign-in of a `fapi2` application in
 * Debian's headless Chromium, the client side done by openid-client
 * unchanged: private_key_jwt (ES256), buildAuthorizationUrlWithPAR with
 * PKCE S256, the code exchanged with a DPoP proof from getDPoPHandle, and
 * userinfo with the DPoP-bound token. The refusals: fapi2Profile.spec.ts.
 */
describe("a FAPI 2.0 sign-in in headless Chromium, driven by openid-client", function () {
  this.timeout(60_000);
  const chromium = useChromium();
  let server: RunningServer;
  let callback: CallbackServer;
  let key: ClientKey;
  const FAPI_APP = { name: "bank", clientId: "bank-client", tokenEndpointAuthMethod: "private_key_jwt", signingAlg: "PS256", profile: "fapi2" };

  before(async () => {
    callback = await startCallbackServer();
    key = await clientKey("ES256");
    server = await startTestServer({
      config: { applications: [{ ...FAPI_APP, redirectUris: [callback.url], jwks: { keys: [key.publicJwk] } }], users: [TEST_USER] },
    });
  });
  after(async () => {
    await server?.close();
    await callback?.close();
  });

  it("signs in through PAR with PKCE, exchanges the code with DPoP and reads userinfo with the bound token", async () => {
    const config = await discover(server, FAPI_APP.clientId, oidc.PrivateKeyJwt({ key: key.privateKey, kid: key.kid }), { id_token_signed_response_alg: "PS256" });
    const dpopKeys = await oidc.randomDPoPKeyPair("ES256");
    const DPoP = oidc.getDPoPHandle(config, dpopKeys);
    const verifier = oidc.randomPKCECodeVerifier();
    const checks = { pkceCodeVerifier: verifier, expectedState: oidc.randomState(), expectedNonce: oidc.randomNonce() };
    const url = await oidc.buildAuthorizationUrlWithPAR(config, {
      redirect_uri: callback.url, response_type: "code", scope: "openid profile", state: checks.expectedState, nonce: checks.expectedNonce,
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: "S256",
    }, { DPoP });
    assert.deepEqual([...url.searchParams.keys()].sort(), ["client_id", "request_uri"]);

    await chromium.page.goto(url.href);
    await chromium.page.getByLabel("Username").fill(TEST_USER.name);
    await chromium.page.getByLabel("Password").fill(TEST_USER.password);
    await chromium.page.getByRole("button", { name: "Sign in", exact: true }).click();
    await chromium.page.waitForURL((landed) => landed.href.startsWith(callback.url));
    const landed = new URL(chromium.page.url());
    assert.equal(landed.searchParams.get("iss"), server.issuer, "RFC 9207: the response names its issuer");

    // openid-client checks iss, state, PKCE and the PS256 ID token (nonce included) itself.
    const tokens = await oidc.authorizationCodeGrant(config, landed, checks, undefined, { DPoP });
    assert.equal(tokens.token_type, "dpop");
    const jkt = await calculateJwkThumbprint(await exportJWK(dpopKeys.publicKey), "sha256");
    assert.deepEqual(decodeJwt(tokens.access_token).cnf, { jkt }, "the access token is bound to the DPoP key");
    const sub = tokens.claims()!.sub;

    const claims = await oidc.fetchUserInfo(config, tokens.access_token, sub, { DPoP });
    assert.equal(claims.preferred_username, TEST_USER.name);
    // The same token without its proof is refused (RFC 9449 §7.1).
    const bearer = await fetch(`${server.url}/api/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    assert.equal(bearer.status, 401);
  });
});
