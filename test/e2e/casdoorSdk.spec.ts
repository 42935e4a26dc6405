import assert from "node:assert/strict";
import { SDK } from "casdoor-nodejs-sdk";
import type { RunningServer } from "../../src/app/server.js";
import { startCallbackServer, type CallbackServer } from "../support/callbackServer.js";
import { useChromium } from "../support/chromium.js";
import { startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

/**
 * Issue 25, item 6: Casdoor's Node SDK (casdoor-nodejs-sdk 1.24.0, from the
 * registry, unchanged) against this service: the sign-in URL it builds, a
 * sign-in through the login page in headless Chromium, the code exchange,
 * the JWT check with the certificate the service publishes, a refresh and
 * an introspection. docs/tokens.md lists the SDK calls out of scope.
 */
describe("the Casdoor Node SDK works end to end, unchanged", function () {
  this.timeout(60_000);
  const chromium = useChromium();
  let server: RunningServer;
  let callback: CallbackServer;

  before(async () => {
    callback = await startCallbackServer();
    server = await startTestServer({
      config: {
        applications: [
          { ...TEST_APP, redirectUris: [callback.url], refreshExpireInHours: 24 },
          { ...TEST_APP, name: "casdoor-jwt", clientId: "client-jwt", redirectUris: [callback.url], refreshExpireInHours: 24, tokenFormat: "JWT" },
        ],
        users: [TEST_USER],
      },
    });
  });
  after(async () => {
    await server?.close();
    await callback?.close();
  });

  /** The SDK as an application configures it, with the certificate `identity keys export` prints. */
  async function sdkFor(app: { name: string; clientId: string; clientSecret: string }): Promise<SDK> {
    const { certificatePem } = await server.domain.keys.export();
    return new SDK({
      endpoint: server.url,
      clientId: app.clientId,
      clientSecret: app.clientSecret,
      certificate: certificatePem,
      orgName: "built-in",
      appName: app.name,
    });
  }

  /** Follow the SDK's sign-in URL and sign in on the login page; the code the client receives. */
  async function signInWith(sdk: SDK, appName: string): Promise<string> {
    const signInUrl = sdk.getSignInUrl(callback.url);
    // Casdoor's SDK asks for scope=read, which this service ignores (it grants openid).
    assert.match(signInUrl, /scope=read/);
    await chromium.page.goto(signInUrl);
    await chromium.page.getByLabel("Username").fill(TEST_USER.name);
    await chromium.page.getByLabel("Password").fill(TEST_USER.password);
    await chromium.page.getByRole("button", { name: "Sign in", exact: true }).click();
    await chromium.page.waitForURL((url) => url.href.startsWith(callback.url));
    const landed = new URL(chromium.page.url());
    assert.equal(landed.searchParams.get("state"), appName, "the SDK sends the application name as state");
    const code = landed.searchParams.get("code");
    assert.ok(code, landed.href);
    return code;
  }

  it("signs in, exchanges the code, verifies the JWT with the published certificate, refreshes and introspects", async () => {
    const sdk = await sdkFor(TEST_APP);
    const code = await signInWith(sdk, TEST_APP.name);

    const tokens = await sdk.getAuthToken(code);
    assert.ok(tokens.access_token);
    assert.ok(tokens.refresh_token);

    const aliceId = (await server.domain.userAdmin.get(TEST_USER.name)).id;
    const claims = sdk.parseJwtToken(tokens.access_token) as unknown as Record<string, unknown>;
    assert.equal(claims.sub, aliceId);
    assert.equal(claims.iss, server.issuer);
    assert.equal(claims.aud, TEST_APP.clientId);
    // A token signed by another key fails the SDK's check.
    assert.throws(() => sdk.parseJwtToken(tokens.access_token.replace(/\.[^.]+$/, ".AAAA")));

    const refreshed = await sdk.refreshToken(tokens.refresh_token);
    assert.ok(refreshed.access_token);
    assert.notEqual(refreshed.access_token, tokens.access_token);
    assert.ok(refreshed.refresh_token);
    assert.equal((sdk.parseJwtToken(refreshed.access_token) as unknown as Record<string, unknown>).sub, aliceId);

    const introspection = await sdk.introspect(refreshed.access_token, "access_token");
    assert.equal(introspection.status, 200);
    assert.equal(introspection.data.active, true);
    assert.equal(introspection.data.client_id, TEST_APP.clientId);
    assert.equal(introspection.data.username, TEST_USER.name);
  });

  it("reads Casdoor's user-object claims from an application with tokenFormat JWT", async () => {
    const app = { name: "casdoor-jwt", clientId: "client-jwt", clientSecret: TEST_APP.clientSecret };
    const sdk = await sdkFor(app);
    const tokens = await sdk.getAuthToken(await signInWith(sdk, app.name));
    const alice = await server.domain.userAdmin.get(TEST_USER.name);
    const claims = sdk.parseJwtToken(tokens.access_token) as unknown as Record<string, unknown>;
    for (const [claim, value] of Object.entries({
      owner: "built-in", name: TEST_USER.name, displayName: TEST_USER.displayName, email: TEST_USER.email,
      avatar: TEST_USER.avatar, id: alice.id, type: "normal-user", sub: alice.id, iss: server.issuer, aud: app.clientId,
    })) {
      assert.equal(claims[claim], value, claim);
    }
    const refreshed = await sdk.refreshToken(tokens.refresh_token);
    assert.equal((sdk.parseJwtToken(refreshed.access_token) as unknown as Record<string, unknown>).owner, "built-in");
  });
});
