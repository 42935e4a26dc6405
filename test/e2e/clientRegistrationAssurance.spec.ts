import assert from "node:assert/strict";
import type { RunningServer } from "../../src/app/server.js";
import { verifyAs } from "../support/backchannel.js";
import { authorizeUrl, browse, CookieJar, confirmSignOut, signIn } from "../support/browserless.js";
import { allowAndRedeem, CONSENT_CALLBACK } from "../support/consents.js";
import { dpopKey, dpopProof } from "../support/dpop.js";
import { LogoutReceiver } from "../support/logoutTokens.js";
import { assertOAuthError, call, getJson, postJson, TOKEN_PATH } from "../support/oauth.js";
import { basicAuth, postForm, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

/**
 * What a client may ask of the service when it registers itself (RFC 7591
 * §2, RFC 7592): back-channel logout (OIDC Back-Channel Logout 1.0 §2.2),
 * DPoP-bound tokens (RFC 9449 §5.2) and pushed authorization requests
 * (RFC 9126 §6), under the rules an administrator's application follows,
 * without the administrator's leave for a private logout address.
 */
describe("dynamic client registration: back-channel logout, DPoP and PAR metadata", function () {
  this.timeout(60_000);
  const REGISTER = "/api/oauth/register";
  const receiver = new LogoutReceiver();
  let server: RunningServer;

  before(async () => {
    await receiver.start();
    server = await startTestServer({
      config: { applications: [TEST_APP], users: [TEST_USER] },
      // The relying-party fakes listen on loopback, which only this test-only flag opens to registrants.
      overrides: { clientRegistration: "open", registrationMaxPerHour: 1000, allowInsecureClientMetadata: true },
      backchannelLogout: { pollMs: 50 },
    });
  });
  beforeEach(() => receiver.clear());
  after(async () => {
    await server?.close();
    await receiver.close();
  });

  const register = (metadata: Record<string, unknown>) => postJson(server.url + REGISTER, { redirect_uris: [CONSENT_CALLBACK], ...metadata });
  const registered = async (metadata: Record<string, unknown>) => {
    const res = await register(metadata);
    assert.equal(res.status, 201, res.text);
    return res.body;
  };
  const stored = async (clientId: string) => (await server.store.applications.findByClientId(clientId, true))!;

  it("registers them, answers and reads them back, and the client's application keeps them, never with leave for a private address", async () => {
    const uri = "https://rp.example.com/backchannel-logout";
    const body = await registered({
      backchannel_logout_uri: uri, backchannel_logout_session_required: true, dpop_bound_access_tokens: true, require_pushed_authorization_requests: true,
      allow_private_backchannel_logout_uri: true,
    });
    const expected = { backchannel_logout_uri: uri, backchannel_logout_session_required: true, dpop_bound_access_tokens: true, require_pushed_authorization_requests: true };
    for (const [field, value] of Object.entries(expected)) assert.equal(body[field], value, field);
    assert.equal(body.allow_private_backchannel_logout_uri, undefined, "not client metadata: an administrator's leave");
    const read = await getJson(body.registration_client_uri, { authorization: `Bearer ${body.registration_access_token}` });
    assert.equal(read.status, 200);
    for (const [field, value] of Object.entries(expected)) assert.equal(read.body[field], value, `read ${field}`);
    const app = await stored(body.client_id);
    assert.deepEqual(
      [app.backchannelLogoutUri, app.backchannelLogoutSessionRequired, app.dpopBoundAccessTokens, app.requirePushedAuthorizationRequests, app.allowPrivateBackchannelLogoutUri],
      [uri, true, true, true, false],
    );

    // Left out, each is off (RFC 7591 §3.2.1: the answer says so).
    const plain = await registered({});
    assert.deepEqual(
      [plain.backchannel_logout_uri, plain.backchannel_logout_session_required, plain.dpop_bound_access_tokens, plain.require_pushed_authorization_requests],
      [undefined, false, false, false],
    );
  });

  it("refuses a private, link-local or plain-http back-channel logout URI, a fragment, and flags that are not true or false: invalid_client_metadata", async () => {
    const refusals: [Record<string, unknown>, RegExp][] = [
      [{ backchannel_logout_uri: "https://10.0.0.7/logout" }, /private or link-local/],
      [{ backchannel_logout_uri: "https://169.254.169.254/latest" }, /private or link-local/],
      [{ backchannel_logout_uri: "https://[fd00::1]/logout" }, /private or link-local/],
      [{ backchannel_logout_uri: "https://192.168.1.2/logout", allow_private_backchannel_logout_uri: true }, /private or link-local/],
      [{ backchannel_logout_uri: "http://rp.example.com/logout" }, /https/],
      [{ backchannel_logout_uri: "https://rp.example.com/logout#frag" }, /fragment/],
      [{ backchannel_logout_uri: "ftp://rp.example.com/logout" }, /https/],
      [{ backchannel_logout_uri: "not a url" }, /absolute URL/],
      [{ backchannel_logout_uri: 42 }, /backchannel_logout_uri must be a string/],
      [{ backchannel_logout_uri: "https://rp.example.com/\nlogout" }, /one line/],
      [{ dpop_bound_access_tokens: "true" }, /dpop_bound_access_tokens must be true or false/],
      [{ require_pushed_authorization_requests: 1 }, /require_pushed_authorization_requests must be true or false/],
      [{ backchannel_logout_session_required: "yes" }, /backchannel_logout_session_required must be true or false/],
    ];
    for (const [metadata, description] of refusals) {
      const res = await register(metadata);
      assertOAuthError(res, 400, "invalid_client_metadata");
      assert.match(res.body.error_description, description, JSON.stringify(metadata));
      assert.doesNotMatch(res.body.error_description, /allowPrivate/, "no leave a registrant could take");
    }
    // Under --allow-insecure-client-metadata (tests only) a loopback URI is taken; without it, never (clientRegistration.spec.ts).
    assert.equal((await registered({ backchannel_logout_uri: "http://127.0.0.1:8123/logout" })).backchannel_logout_uri, "http://127.0.0.1:8123/logout");
  });

  it("replaces them on an RFC 7592 update: one left out is off, and a private URI is refused there too", async () => {
    const body = await registered({ backchannel_logout_uri: "https://rp.example.com/bc", dpop_bound_access_tokens: true, require_pushed_authorization_requests: true });
    const put = (metadata: Record<string, unknown>) =>
      call(body.registration_client_uri, {
        method: "PUT",
        headers: { "content-type": "application/json", authorization: `Bearer ${body.registration_access_token}` },
        body: JSON.stringify({ client_id: body.client_id, redirect_uris: [CONSENT_CALLBACK], ...metadata }),
      });
    const refused = await put({ backchannel_logout_uri: "https://172.16.0.1/bc" });
    assertOAuthError(refused, 400, "invalid_client_metadata");
    assert.equal((await stored(body.client_id)).backchannelLogoutUri, "https://rp.example.com/bc", "a refused update changes nothing");

    const updated = await put({ backchannel_logout_session_required: true });
    assert.equal(updated.status, 200, updated.text);
    assert.deepEqual(
      [updated.body.backchannel_logout_uri, updated.body.backchannel_logout_session_required, updated.body.dpop_bound_access_tokens, updated.body.require_pushed_authorization_requests],
      [undefined, true, false, false],
    );
    const app = await stored(body.client_id);
    assert.deepEqual([app.backchannelLogoutUri, app.backchannelLogoutSessionRequired, app.dpopBoundAccessTokens ?? false, app.requirePushedAuthorizationRequests], ["", true, false, false]);
  });

  it("holds the client to them: a plain authorize request is refused under PAR, a token request without a proof under DPoP", async () => {
    const par = await registered({ require_pushed_authorization_requests: true });
    const plain = await browse(authorizeUrl(server.url, { client_id: par.client_id, redirect_uri: CONSENT_CALLBACK }), new CookieJar());
    const location = new URL(plain.headers.get("location") ?? "http://missing/");
    assert.equal(location.searchParams.get("error"), "invalid_request");
    assert.match(location.searchParams.get("error_description") ?? "", /PAR/);
    const { pushed_authorization_request_endpoint: parEndpoint } = (await getJson(`${server.url}/.well-known/openid-configuration`)).body;
    const pushed = await postForm(parEndpoint, {
      response_type: "code", redirect_uri: CONSENT_CALLBACK, scope: "openid", code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", code_challenge_method: "S256",
    }, { authorization: basicAuth(par.client_id, par.client_secret) });
    assert.equal(pushed.status, 201, pushed.text);

    const dpop = await registered({ dpop_bound_access_tokens: true });
    const auth = { authorization: basicAuth(dpop.client_id, dpop.client_secret) };
    const code = { grant_type: "authorization_code", code: "no-such-code", redirect_uri: CONSENT_CALLBACK };
    assertOAuthError(await postForm(server.url + TOKEN_PATH, code, auth), 400, "invalid_dpop_proof");
    // With a proof the request goes on, to the code (which is made up here).
    const proof = await dpopProof(await dpopKey(), { htm: "POST", htu: `${server.issuer}${TOKEN_PATH}` });
    assertOAuthError(await postForm(server.url + TOKEN_PATH, code, { ...auth, dpop: proof }), 400, "invalid_grant");
  });

  it("sends its logout tokens to the URI it registered when the user signs out", async () => {
    const client = await registered({ backchannel_logout_uri: receiver.url("/registered"), backchannel_logout_session_required: true });
    verifyAs(receiver, server, new Map([["/registered", client.client_id]]));
    const { jar } = await signIn(server);
    await allowAndRedeem(server, client, jar);
    const signedOut = await confirmSignOut(server.url, jar);
    assert.ok(signedOut.status < 400, `sign-out answered ${signedOut.status}`);
    const [delivered] = await receiver.accepted(1);
    assert.equal(delivered!.path, "/registered");
    assert.equal(delivered!.claims!.aud, client.client_id);
    assert.ok(delivered!.claims!.sid, "with sid, as it asked");
  });
});
