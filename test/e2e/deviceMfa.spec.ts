import assert from "node:assert/strict";
import { decodeJwt } from "jose";
import { Secret, TOTP } from "otpauth";
import type { RunningServer } from "../../src/app/server.js";
import { browse, CookieJar, submit } from "../support/browserless.js";
import { FakeClock } from "../support/clock.js";
import { elementText, enrolTotp } from "../support/factors.js";
import { postForm, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

const DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code";
const TV_APP = { name: "tv", clientId: "client-tv", publicClient: true, grantTypes: ["device_code"] };
const STRICT_TV_APP = { name: "strict-tv", clientId: "client-strict-tv", publicClient: true, grantTypes: ["device_code"], mfa: "required" };

/** An authenticator app's code, computed from the shown secret with otpauth (RFC 6238: SHA-1, 6 digits, 30 s). */
const code = (secret: string, at: number) => new TOTP({ secret: Secret.fromBase32(secret), algorithm: "SHA1", digits: 6, period: 30 }).generate({ timestamp: at });

/** The /device page's sign-in with the application's second-factor policy (issue #44 §1, issue #46 §4), driven with fetch. */
describe("second factor at /device (RFC 8628 §3.3, issue #46)", () => {
  let server: RunningServer;
  const clock = new FakeClock();

  before(async () => {
    server = await startTestServer({ clock, config: { applications: [TEST_APP, TV_APP, STRICT_TV_APP], users: [TEST_USER] } });
  });
  after(() => server?.close());

  async function deviceCode(clientId: string) {
    const res = await postForm(`${server.url}/api/device-auth`, { client_id: clientId, scope: "openid" });
    assert.equal(res.status, 200, res.text);
    return res.body as { device_code: string; user_code: string };
  }
  const poll = (deviceCodeValue: string, clientId: string) => postForm(`${server.url}/api/login/oauth/access_token`, { grant_type: DEVICE_GRANT, device_code: deviceCodeValue, client_id: clientId });
  const hidden = (html: string, name: string) => new RegExp(`name="${name}" value="([^"]*)"`).exec(html)?.[1];

  /** The code and the password at /device: the page that follows. */
  async function codeAndPassword(userCode: string, user: { name: string; password: string }, jar = new CookieJar()) {
    const page = await (await browse(`${server.url}/device?user_code=${userCode}`, jar)).text();
    const csrf = hidden(page, "csrf_token")!;
    const res = await submit(`${server.url}/device`, { csrf_token: csrf, step: "code", user_code: userCode, username: user.name, password: user.password }, jar);
    return { res, html: await res.text(), csrf, jar };
  }

  /** Back at /device after the factor step: the code again (filled in), then Allow. */
  async function allowAfterFactor(location: string, userCode: string, jar: CookieJar, csrf: string) {
    assert.equal(location, `/device?user_code=${userCode}`);
    const page = await (await browse(`${server.url}${location}`, jar)).text();
    assert.doesNotMatch(page, /name="password"/, "signed in: no password asked again");
    const consent = await submit(`${server.url}/device`, { csrf_token: csrf, step: "code", user_code: userCode }, jar);
    assert.match(await consent.text(), /Allow <strong>/);
    const done = await submit(`${server.url}/device`, { csrf_token: csrf, step: "decide", user_code: userCode, decision: "allow" }, jar);
    assert.equal(done.status, 200);
  }

  it("a user with a factor types the code from the app after the password; only then can the device get tokens", async () => {
    const user = { name: "dora", password: "pw-dora-12345" };
    await server.domain.userAdmin.create(user as never);
    clock.advanceSeconds(30);
    const { secret } = await enrolTotp(server, user.name);
    const device = await deviceCode(TV_APP.clientId);
    const { res, html, csrf, jar } = await codeAndPassword(device.user_code, user);
    assert.equal(res.status, 200);
    assert.match(html, /Two-step verification/);
    // Skipping the factor: the decision is refused, and the device still waits.
    const skipped = await submit(`${server.url}/device`, { csrf_token: csrf, step: "decide", user_code: device.user_code, decision: "allow" }, jar);
    assert.equal(skipped.status, 400);
    assert.equal((await poll(device.device_code, TV_APP.clientId)).body.error, "authorization_pending");
    const verified = await submit(`${server.url}/login/factor`, { request: hidden(html, "request")!, csrf_token: csrf, code: code(secret, clock.now()) }, jar);
    assert.equal(verified.status, 303, await verified.clone().text());
    await allowAfterFactor(verified.headers.get("location")!, device.user_code, jar, csrf);
    clock.advanceSeconds(15);
    const tokens = await poll(device.device_code, TV_APP.clientId);
    assert.equal(tokens.status, 200, tokens.text);
    const idToken = decodeJwt(tokens.body.id_token as string);
    assert.deepEqual([idToken.acr, idToken.amr], ["mfa", ["pwd", "otp", "mfa"]], "the device's tokens say what the sign-in proved");
  });

  it("mfa required: a user without a factor enrols one at /device, from the shown secret, before allowing", async () => {
    const user = { name: "emil", password: "pw-emil-12345" };
    await server.domain.userAdmin.create(user as never);
    const device = await deviceCode(STRICT_TV_APP.clientId);
    const { html, csrf, jar } = await codeAndPassword(device.user_code, user);
    assert.match(html, /Set up two-step verification/);
    const secret = elementText(html, "totp-secret");
    const enrolled = await submit(`${server.url}/login/factor/enrol`, { request: hidden(html, "request")!, csrf_token: csrf, factor: hidden(html, "factor")!, code: code(secret, clock.now()) }, jar);
    assert.match(await enrolled.text(), /Save your recovery codes/);
    const done = await submit(`${server.url}/login/factor/continue`, { request: hidden(html, "request")!, csrf_token: csrf }, jar);
    assert.equal(done.status, 303);
    await allowAfterFactor(done.headers.get("location")!, device.user_code, jar, csrf);
    assert.equal((await poll(device.device_code, STRICT_TV_APP.clientId)).status, 200);
  });

  it("step-up: a password-only session is asked for the factor before a required application's device is allowed", async () => {
    clock.advanceSeconds(60);
    const plain = await deviceCode(TV_APP.clientId);
    // alice signs in with her password alone (no factor yet), at an optional application's device.
    const signedIn = await codeAndPassword(plain.user_code, TEST_USER);
    assert.match(signedIn.html, /Allow <strong>/);
    const { secret } = await enrolTotp(server, TEST_USER.name);
    const strict = await deviceCode(STRICT_TV_APP.clientId);
    const { jar, csrf } = signedIn;
    const asked = await submit(`${server.url}/device`, { csrf_token: csrf, step: "code", user_code: strict.user_code }, jar);
    const html = await asked.text();
    assert.match(html, /Two-step verification/);
    const refused = await submit(`${server.url}/device`, { csrf_token: csrf, step: "decide", user_code: strict.user_code, decision: "allow" }, jar);
    assert.equal(refused.status, 400);
    const verified = await submit(`${server.url}/login/factor`, { request: hidden(html, "request")!, csrf_token: csrf, code: code(secret, clock.now()) }, jar);
    await allowAfterFactor(verified.headers.get("location")!, strict.user_code, jar, csrf);
    assert.equal((await poll(strict.device_code, STRICT_TV_APP.clientId)).status, 200);
  });
});
