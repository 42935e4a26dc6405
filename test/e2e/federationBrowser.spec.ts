import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { FederationService } from "../../gen/identity/v1/federation_pb.js";
import type { RunningServer } from "../../src/app/server.js";
import { authorizeUrl } from "../support/browserless.js";
import { startCallbackServer, type CallbackServer } from "../support/callbackServer.js";
import { useChromium } from "../support/chromium.js";
import { getJson } from "../support/oauth.js";
import { ADMIN_TOKEN, postForm, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

const SCREENSHOTS = "test-output/screenshots";

/** Our registration at the upstream; the secret needs RFC 6749 §2.3.1 encoding in Basic auth. */
const AT_UPSTREAM = { name: "downstream", clientId: "downstream-client", clientSecret: "downstream secret: with space+plus", grantTypes: [] };

/**
 * The whole round trip in headless Chromium, with a second instance of this
 * service as the Custom provider: its login page, its token endpoint and its
 * userinfo are what the spec asks of an upstream.
 */
describe("federated sign-in in headless Chromium, with this service as the upstream", function () {
  this.timeout(60_000);
  const chromium = useChromium();
  let callback: CallbackServer;
  let ours: RunningServer;
  let upstream: RunningServer;

  before(async () => {
    mkdirSync(SCREENSHOTS, { recursive: true });
    callback = await startCallbackServer();
    // Ours has its own alice (password sign-in), so the federated alice needs another name.
    ours = await startTestServer({ config: { applications: [{ ...TEST_APP, redirectUris: [callback.url] }], users: [TEST_USER] } });
    // The upstream must know our callback, which names our port: so it starts second.
    upstream = await startTestServer({
      config: { applications: [{ ...AT_UPSTREAM, redirectUris: [`${ours.issuer}/callback/upstream`] }], users: [TEST_USER] },
    });
    const federation = createClient(FederationService, createConnectTransport({ baseUrl: ours.url, httpVersion: "1.1" }));
    await federation.createProvider(
      {
        provider: {
          name: "upstream",
          type: "Custom",
          displayName: "Upstream ID",
          clientId: AT_UPSTREAM.clientId,
          clientSecret: AT_UPSTREAM.clientSecret,
          authUrl: `${upstream.url}/login/oauth/authorize`,
          scope: "openid profile email",
          tokenUrl: `${upstream.url}/api/login/oauth/access_token`,
          userInfoUrl: `${upstream.url}/api/userinfo`,
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

  /**
   * From the client's authorize request to the client's redirect_uri: the
   * provider button, the upstream's login form, back through our /callback/upstream.
   * The browser talks to us at our issuer, the host the upstream returns to.
   */
  async function signInThroughUpstream(state: string, screenshot?: string): Promise<string> {
    // account: the client reads the linked identities at get-account.
    await chromium.page.goto(authorizeUrl(ours.issuer, { redirect_uri: callback.url, scope: "openid profile email account", state }));
    const button = chromium.page.getByRole("button", { name: "Sign in with Upstream ID" });
    assert.ok(await button.locator("img").evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth > 0), "favicon loads");
    await button.click();
    await chromium.page.waitForURL((url) => url.href.startsWith(`${upstream.url}/login/oauth/authorize`));
    assert.equal(await chromium.page.title(), `Sign in to ${AT_UPSTREAM.name}`, "the upstream's own login page");
    if (screenshot) await chromium.page.screenshot({ path: `${SCREENSHOTS}/${screenshot}`, fullPage: true });
    await chromium.page.getByLabel("Username").fill(TEST_USER.name);
    await chromium.page.getByLabel("Password").fill(TEST_USER.password);
    await chromium.page.getByRole("button", { name: "Sign in", exact: true }).click();
    await chromium.page.waitForURL((url) => url.href.startsWith(callback.url));
    const landed = new URL(chromium.page.url());
    assert.equal(landed.searchParams.get("state"), state);
    assert.equal(landed.searchParams.get("iss"), ours.issuer);
    return landed.searchParams.get("code")!;
  }

  /** The client's side: exchange the code at our token endpoint and ask our userinfo and get-account. */
  async function clientSees(code: string) {
    const tokens = await postForm(`${ours.url}/api/login/oauth/access_token`, {
      grant_type: "authorization_code",
      client_id: TEST_APP.clientId,
      client_secret: TEST_APP.clientSecret,
      code,
    });
    assert.equal(tokens.status, 200, JSON.stringify(tokens.body));
    const bearer = { authorization: `Bearer ${tokens.body.access_token}` };
    return {
      userinfo: (await getJson(`${ours.url}/api/userinfo`, bearer)).body,
      account: (await getJson(`${ours.url}/api/get-account`, bearer)).body.data,
    };
  }

  it("first sign-in creates a local user, the second reuses it, and the client sees the federated user", async () => {
    const upstreamAlice = await upstream.domain.userAdmin.get(TEST_USER.name);
    const localAlice = await ours.domain.userAdmin.get(TEST_USER.name);
    const usersBefore = (await ours.domain.userAdmin.list()).length;

    const first = await clientSees(await signInThroughUpstream("first-visit", "upstream-login-page.png"));
    assert.notEqual(first.userinfo.sub, localAlice.id, "never linked to the local alice by name or email");
    assert.deepEqual(first.userinfo, {
      sub: first.userinfo.sub,
      iss: ours.issuer,
      aud: TEST_APP.clientId,
      name: TEST_USER.displayName,
      preferred_username: `${TEST_USER.name}-2`,
      picture: TEST_USER.avatar,
      email: TEST_USER.email,
      email_verified: false,
      // How the user signed in (issue 46 §4): through a provider, one factor.
      auth_time: first.userinfo.auth_time,
      acr: "pwd",
      amr: ["fed"],
    });
    assert.equal(typeof first.userinfo.auth_time, "number");
    assert.deepEqual(first.account.linkedIdentities, [{ provider: "upstream", externalId: upstreamAlice.id, username: TEST_USER.name }]);
    assert.equal((await ours.domain.userAdmin.list()).length, usersBefore + 1);

    // A fresh profile: no session at either service, so both sign-ins happen again.
    await chromium.restart();
    const second = await clientSees(await signInThroughUpstream("second-visit"));
    assert.equal(second.userinfo.sub, first.userinfo.sub);
    assert.equal((await ours.domain.userAdmin.list()).length, usersBefore + 1);
  });

  it("passes the upstream's refusal on to the client as access_denied, with its state and iss", async () => {
    await chromium.page.goto(authorizeUrl(ours.issuer, { redirect_uri: callback.url, scope: "openid", state: "refused" }));
    // The upstream refuses a PKCE method it does not offer, back at our /callback with error=invalid_request.
    // (An unknown scope no longer serves: it is ignored, OIDC Core §3.1.2.1.)
    const authUrl = `${upstream.url}/login/oauth/authorize`;
    await ours.domain.providerAdmin.update({ name: "upstream", authUrl: `${authUrl}?code_challenge_method=plain` });
    try {
      await chromium.page.getByRole("button", { name: "Sign in with Upstream ID" }).click();
      // Through our /callback, straight on to the client.
      await chromium.page.waitForURL((url) => url.href.startsWith(callback.url));
      const landed = new URL(chromium.page.url());
      assert.equal(landed.searchParams.get("error"), "access_denied");
      assert.equal(landed.searchParams.get("state"), "refused");
      assert.equal(landed.searchParams.get("iss"), ours.issuer);
      assert.equal(landed.searchParams.get("code"), null);
      assert.match(landed.searchParams.get("error_description")!, /Upstream ID did not sign you in \(invalid_request: code_challenge_method was sent without code_challenge\)/);
    } finally {
      await ours.domain.providerAdmin.update({ name: "upstream", authUrl });
    }
  });
});
