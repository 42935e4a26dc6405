import assert from "node:assert/strict";
import * as oidc from "openid-client";
import type { RunningServer } from "../../src/app/server.js";
import { normalizeUserCode, USER_CODE_ALPHABET } from "../../src/oauth/deviceAuthorization.js";
import { browse, CookieJar, submit } from "../support/browserless.js";
import { useChromium } from "../support/chromium.js";
import { GrpcCaller, oauthErrorOf } from "../support/grpc.js";
import { postForm, startTestServer, TEST_APP, TEST_USER, type HttpResult } from "../support/server.js";

const DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code";
/** A public client (a CLI), as RFC 8628 expects; the short name enables the grant. */
const TV_APP = { name: "tv", clientId: "client-tv", publicClient: true, grantTypes: ["device_code", "refresh_token"], refreshExpireInHours: 24 };

describe("device authorization grant (RFC 8628)", () => {
  let server: RunningServer;
  before(async () => {
    server = await startTestServer({
      config: { applications: [TEST_APP, TV_APP], users: [TEST_USER] },
      overrides: { loginMaxFailuresPerIp: 20 },
    });
  });
  after(() => server.close());

  const start = (clientId = TV_APP.clientId, scope = "openid profile"): Promise<HttpResult> =>
    postForm(`${server.url}/api/device-auth`, { client_id: clientId, scope });
  const poll = (deviceCode: string, clientId = TV_APP.clientId): Promise<HttpResult> =>
    postForm(`${server.url}/api/login/oauth/access_token`, { grant_type: DEVICE_GRANT, device_code: deviceCode, client_id: clientId });

  /** The user's part without a browser: sign in at /device and decide. */
  async function decide(userCode: string, decision: "allow" | "deny"): Promise<Response> {
    const jar = new CookieJar();
    const page = await (await browse(`${server.url}/device?user_code=${userCode}`, jar)).text();
    const csrf = /name="csrf_token" value="([^"]+)"/.exec(page)![1]!;
    const consent = await submit(`${server.url}/device`, { csrf_token: csrf, step: "code", user_code: userCode, username: TEST_USER.name, password: TEST_USER.password }, jar);
    assert.equal(consent.status, 200, await consent.clone().text());
    return submit(`${server.url}/device`, { csrf_token: csrf, step: "decide", user_code: userCode, decision }, jar);
  }

  it("is in discovery: the endpoint and the grant", async () => {
    const config = await oidc.discovery(new URL(server.issuer), TV_APP.clientId, undefined, oidc.None(), { execute: [oidc.allowInsecureRequests] });
    assert.equal(config.serverMetadata().device_authorization_endpoint, `${server.issuer}/api/device-auth`);
    assert.ok(config.serverMetadata().grant_types_supported?.includes(DEVICE_GRANT));
  });

  it("answers with a device code and an XXXX-XXXX user code of consonants, 600 s and an interval of 5 s", async () => {
    const res = await start();
    assert.equal(res.status, 200, res.text);
    assert.match(res.body.user_code, new RegExp(`^[${USER_CODE_ALPHABET}]{4}-[${USER_CODE_ALPHABET}]{4}$`));
    assert.equal(res.body.verification_uri, `${server.issuer}/device`);
    assert.equal(res.body.verification_uri_complete, `${server.issuer}/device?user_code=${res.body.user_code}`);
    assert.equal(res.body.expires_in, 600);
    assert.equal(res.body.interval, 5);
    assert.equal(normalizeUserCode(` ${res.body.user_code.toLowerCase().replace("-", "")} `), res.body.user_code.replace("-", ""));
  });

  it("refuses an application that has not enabled the grant, and a confidential client without its secret", async () => {
    const res = await start(TEST_APP.clientId);
    assert.equal(res.status, 401);
    assert.equal(res.body.error, "invalid_client");
    const authenticated = await postForm(`${server.url}/api/device-auth`, { client_id: TEST_APP.clientId, client_secret: TEST_APP.clientSecret });
    assert.equal(authenticated.status, 400);
    assert.equal(authenticated.body.error, "unauthorized_client");
  });

  it("answers polls with authorization_pending, then slow_down (the interval grows by 5 s), access_denied once denied", async () => {
    const { body } = await start();
    const first = await poll(body.device_code);
    assert.equal(first.body.error, "authorization_pending", first.text);
    const fast = await poll(body.device_code);
    assert.equal(fast.body.error, "slow_down");
    assert.match(fast.body.error_description, /every 10 seconds/);
    assert.equal((await decide(body.user_code, "deny")).status, 200);
    // The interval grew to 10 s; a poll after it hears the denial. The clock is real, so the store is told the last poll was long ago.
    await server.store.db("device_codes").update({ last_polled_at: 0 });
    const denied = await poll(body.device_code);
    assert.equal(denied.status, 400);
    assert.equal(denied.body.error, "access_denied");
    assert.equal((await poll("not-a-device-code")).body.error, "invalid_grant");
  });

  it("gives exactly one of 20 parallel polls the tokens", async () => {
    const { body } = await start();
    assert.equal((await decide(body.user_code, "allow")).status, 200);
    const answers = await Promise.all(Array.from({ length: 20 }, () => poll(body.device_code)));
    const won = answers.filter((a) => a.status === 200);
    assert.equal(won.length, 1, answers.map((a) => a.text).join("\n"));
    assert.ok(won[0]!.body.access_token && won[0]!.body.id_token && won[0]!.body.refresh_token);
    assert.ok(answers.every((a) => a.status === 200 || ["slow_down", "invalid_grant"].includes(a.body.error)));
    await server.store.db("device_codes").update({ last_polled_at: 0 });
    assert.equal((await poll(body.device_code)).body.error, "invalid_grant", "a device code yields one token response");
  });

  it("over gRPC: DeviceAuthorization and Token with device_code (grpc-js)", async () => {
    const grpc = new GrpcCaller(server.url);
    try {
      const answer = await grpc.call("TokenService", "DeviceAuthorization", { client_id: TV_APP.clientId, scope: "openid" });
      assert.ok(answer.device_code && answer.user_code);
      const pending = await grpc.call("TokenService", "Token", { grant_type: DEVICE_GRANT, client_id: TV_APP.clientId, device_code: answer.device_code }).then(() => undefined, (e: unknown) => e);
      assert.equal(oauthErrorOf(pending), "authorization_pending");
      await decide(answer.user_code, "allow");
      await server.store.db("device_codes").update({ last_polled_at: 0 });
      const tokens = await grpc.call("TokenService", "Token", { grant_type: DEVICE_GRANT, client_id: TV_APP.clientId, device_code: answer.device_code });
      assert.ok(tokens.access_token);
    } finally {
      grpc.close();
    }
  });

  describe("in Chromium, with openid-client polling", () => {
    const chromium = useChromium();

    it("signs in and allows with the keyboard alone; openid-client's pollDeviceAuthorizationGrant gets the tokens", async () => {
      const config = await oidc.discovery(new URL(server.issuer), TV_APP.clientId, undefined, oidc.None(), { execute: [oidc.allowInsecureRequests] });
      const device = await oidc.initiateDeviceAuthorization(config, { scope: "openid profile" });
      const polled = oidc.pollDeviceAuthorizationGrant(config, device);
      const { page } = chromium;
      await page.goto(device.verification_uri_complete!);
      assert.equal(await page.title(), "Connect a device");
      assert.equal(await page.getByLabel("Code").inputValue(), device.user_code);
      // The code is filled in: the cursor waits in the user name.
      await page.keyboard.type(TEST_USER.name);
      await page.keyboard.press("Tab");
      await page.keyboard.type(TEST_USER.password);
      await page.keyboard.press("Enter");
      await page.waitForSelector("text=Allow");
      assert.match((await page.locator(".scopes").textContent())!, /openid.*profile/);
      assert.match(await page.title(), new RegExp(TV_APP.name));
      await page.keyboard.press("Enter");
      await page.waitForSelector("text=Device connected");
      const tokens = await polled;
      assert.ok(tokens.access_token);
      assert.equal(tokens.claims()?.preferred_username, TEST_USER.name);
    });
  });
});

describe("device user codes under the per-address sign-in budget", () => {
  let server: RunningServer;
  before(async () => {
    server = await startTestServer({ config: { applications: [TEST_APP, TV_APP], users: [TEST_USER] }, overrides: { loginMaxFailuresPerIp: 3 } });
  });
  after(() => server.close());

  it("locks the address after wrong codes, and then refuses even the right one, saying so", async () => {
    const { body } = await postForm(`${server.url}/api/device-auth`, { client_id: TV_APP.clientId });
    const jar = new CookieJar();
    const csrf = /name="csrf_token" value="([^"]+)"/.exec(await (await browse(`${server.url}/device`, jar)).text())![1]!;
    const attempt = (userCode: string) => submit(`${server.url}/device`, { csrf_token: csrf, step: "code", user_code: userCode, username: TEST_USER.name, password: TEST_USER.password }, jar);
    const wrong = await Promise.all(["BBBB-BBBB", "CCCC-CCCC", "DDDD-DDDD", "FFFF-FFFF", "GGGG-GGGG"].map(attempt));
    assert.ok(wrong.every((r) => r.status === 400));
    const right = await attempt(body.user_code);
    assert.equal(right.status, 400);
    assert.match(await right.text(), /too many failed sign-in attempts/i);
  });
});
