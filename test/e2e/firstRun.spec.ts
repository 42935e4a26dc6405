import assert from "node:assert/strict";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { FederationService } from "../../gen/identity/v1/federation_pb.js";
import { listeningUrl, type RunningServer } from "../../src/app/server.js";
import { authorizeUrl } from "../support/browserless.js";
import { startCallbackServer, type CallbackServer } from "../support/callbackServer.js";
import { useChromium } from "../support/chromium.js";
import { getJson } from "../support/oauth.js";
import { ADMIN_TOKEN, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

/**
 * Issue 25 §4: without --issuer, the issuer is the URL the start prints, so a
 * browser that follows the printed URL stays on one host: the cookies of the
 * sign-in, of a federated sign-in's state and of sign-out come back.
 * (Before, the issuer was http://localhost:<port> while 127.0.0.1 was printed,
 * and a federated sign-in failed with "started in another browser".)
 */
describe("the first run: the issuer is the printed listening URL", function () {
  this.timeout(60_000);

  it("names the loopback address for a wildcard host, and keeps any other host as given", () => {
    assert.equal(listeningUrl("127.0.0.1", 8000), "http://127.0.0.1:8000");
    assert.equal(listeningUrl("0.0.0.0", 8000), "http://127.0.0.1:8000");
    assert.equal(listeningUrl("::", 8000), "http://[::1]:8000");
    assert.equal(listeningUrl("::1", 8000), "http://[::1]:8000");
    assert.equal(listeningUrl("id.internal", 8000), "http://id.internal:8000");
  });

  describe("a server started without --issuer", () => {
    let server: RunningServer;
    before(async () => (server = await startTestServer()));
    after(() => server?.close());

    it("has the listening URL as its issuer, and discovery through that URL names it for every endpoint", async () => {
      assert.equal(server.issuer, server.url);
      assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+$/);
      const { status, body } = await getJson(`${server.url}/.well-known/openid-configuration`);
      assert.equal(status, 200);
      assert.equal(body.issuer, server.url);
      const endpoints = Object.entries(body as Record<string, unknown>).filter(([key]) => key.endsWith("_endpoint") || key === "jwks_uri");
      assert.ok(endpoints.length >= 6, JSON.stringify(endpoints));
      for (const [key, value] of endpoints) assert.ok(String(value).startsWith(`${server.url}/`), `${key}: ${value}`);
    });
  });

  describe("in headless Chromium, following the printed URL", () => {
    const chromium = useChromium();
    let callback: CallbackServer;
    let ours: RunningServer;
    let upstream: RunningServer;
    const AT_UPSTREAM = { name: "downstream", clientId: "downstream-client", clientSecret: "downstream-secret-0123", grantTypes: [] };

    before(async () => {
      callback = await startCallbackServer();
      ours = await startTestServer({ config: { applications: [{ ...TEST_APP, redirectUris: [callback.url] }], users: [] } });
      // The upstream returns to our /callback/upstream under the issuer: the host the browser came with.
      upstream = await startTestServer({ config: { applications: [{ ...AT_UPSTREAM, redirectUris: [`${ours.issuer}/callback/upstream`] }], users: [TEST_USER] } });
      const federation = createClient(FederationService, createConnectTransport({ baseUrl: ours.url, httpVersion: "1.1" }));
      await federation.createProvider(
        {
          provider: {
            name: "upstream", type: "Custom", displayName: "Upstream ID",
            clientId: AT_UPSTREAM.clientId, clientSecret: AT_UPSTREAM.clientSecret,
            authUrl: `${upstream.url}/login/oauth/authorize`, scope: "openid profile email",
            tokenUrl: `${upstream.url}/api/login/oauth/access_token`, userInfoUrl: `${upstream.url}/api/userinfo`,
            favicon: `${new URL(callback.url).origin}/favicon.svg`,
          },
        },
        { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } },
      );
      await ours.domain.applicationAdmin.update({ name: TEST_APP.name, providers: ["upstream"] });
    });
    after(async () => {
      await ours?.close();
      await upstream?.close();
      await callback?.close();
    });

    it("signs in through a Custom provider and back, then signs out to the post_logout_redirect_uri", async () => {
      const { page } = chromium;
      await page.goto(authorizeUrl(ours.url, { redirect_uri: callback.url, scope: "openid", state: "first-run" }));
      await page.getByRole("button", { name: "Sign in with Upstream ID" }).click();
      await page.waitForURL((url) => url.href.startsWith(`${upstream.url}/login/oauth/authorize`));
      await page.getByLabel("Username").fill(TEST_USER.name);
      await page.getByLabel("Password").fill(TEST_USER.password);
      await page.getByRole("button", { name: "Sign in", exact: true }).click();
      await page.waitForURL((url) => url.href.startsWith(callback.url));
      const landed = new URL(page.url());
      assert.equal(landed.searchParams.get("state"), "first-run", page.url());
      assert.ok(landed.searchParams.get("code"), page.url());
      assert.equal(landed.searchParams.get("iss"), ours.url);

      // Signed in at ours, on the printed host: sign-out asks, then goes where the client said.
      const signOut = `${ours.url}/api/logout?${new URLSearchParams({ client_id: TEST_APP.clientId, post_logout_redirect_uri: callback.url, state: "bye" })}`;
      await page.goto(signOut);
      await page.getByRole("button", { name: "Sign out" }).click();
      await page.waitForURL((url) => url.href.startsWith(callback.url) && url.searchParams.get("state") === "bye");
    });
  });
});
