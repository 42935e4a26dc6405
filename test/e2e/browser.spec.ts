import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import type { RunningServer } from "../../src/app/server.js";
import { authorizeUrl, pkcePair } from "../support/browserless.js";
import { startCallbackServer, type CallbackServer } from "../support/callbackServer.js";
import { useChromium } from "../support/chromium.js";
import { postForm, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

const SCREENSHOTS = "test-output/screenshots";

/** The same flows a user clicks through, in Debian's headless Chromium. */
describe("browser sign-in in headless Chromium", function () {
  this.timeout(60_000);
  const chromium = useChromium();
  let server: RunningServer;
  let callback: CallbackServer;

  before(async () => {
    mkdirSync(SCREENSHOTS, { recursive: true });
    callback = await startCallbackServer();
    const clientOrigin = new URL(callback.url).origin;
    // A provider, so the page shows its button (federationBrowser.spec.ts runs the round trip).
    const provider = {
      name: "acme", type: "Custom", displayName: "Acme", clientId: "acme", clientSecret: "acme-secret", scope: "openid",
      authUrl: `${clientOrigin}/authorize`, tokenUrl: `${clientOrigin}/token`, userInfoUrl: `${clientOrigin}/userinfo`,
      favicon: `${clientOrigin}/favicon.svg`,
    };
    server = await startTestServer({
      config: {
        applications: [{ ...TEST_APP, redirectUris: [callback.url], providers: ["acme"] }],
        users: [TEST_USER],
        providers: [provider],
      },
    });
  });
  after(async () => {
    await server?.close();
    await callback?.close();
  });


  const authorize = (params: Record<string, string> = {}) => authorizeUrl(server.url, { redirect_uri: callback.url, ...params });

  async function signInWithForm(username = TEST_USER.name, password = TEST_USER.password): Promise<void> {
    await chromium.page.getByLabel("Username").fill(username);
    await chromium.page.getByLabel("Password").fill(password);
    await chromium.page.getByRole("button", { name: "Sign in", exact: true }).click();
  }

  // The DOM is not in this project's TypeScript lib; the function runs in the page.
  const focusedId = () =>
    chromium.page.evaluate(() => (globalThis as unknown as { document: { activeElement: { id: string } | null } }).document.activeElement?.id);

  async function landOnCallback(): Promise<URL> {
    await chromium.page.waitForURL((url) => url.href.startsWith(callback.url));
    return new URL(chromium.page.url());
  }

  const exchange = (fields: Record<string, string>) =>
    postForm(`${server.url}/api/login/oauth/access_token`, { grant_type: "authorization_code", client_id: TEST_APP.clientId, ...fields });

  it("signs in through the form and lands on the client with a code that exchanges for tokens", async () => {
    await chromium.page.goto(authorize({ scope: "openid profile" }));
    assert.equal(await chromium.page.title(), `Sign in to ${TEST_APP.name}`);
    assert.equal(await chromium.page.getByRole("heading", { level: 1 }).textContent(), "Sign in");
    assert.match((await chromium.page.locator(".subtitle").textContent())!, new RegExp(TEST_APP.name));
    assert.equal(await focusedId(), "username", "the username field has focus");
    const providerButton = chromium.page.getByRole("button", { name: "Sign in with Acme" });
    await providerButton.waitFor();
    assert.ok(await providerButton.locator("img").evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth > 0), "favicon loads");
    await chromium.page.screenshot({ path: `${SCREENSHOTS}/login-page.png`, fullPage: true });

    await signInWithForm();
    const landed = await landOnCallback();
    assert.equal(landed.searchParams.get("state"), "state-123");
    assert.equal(landed.searchParams.get("iss"), server.issuer);
    const code = landed.searchParams.get("code")!;
    assert.equal(callback.requests.at(-1)?.searchParams.get("code"), code, "the client's server received the code");

    const tokens = await exchange({ client_secret: TEST_APP.clientSecret, code });
    assert.equal(tokens.status, 200);
    assert.equal(tokens.body.scope, "openid profile");
    assert.ok(tokens.body.id_token);
  });

  it("signs in with PKCE and exchanges the code without a client secret", async () => {
    const { verifier, challenge } = pkcePair();
    await chromium.page.goto(authorize({ code_challenge: challenge, code_challenge_method: "S256" }));
    await signInWithForm();
    const code = (await landOnCallback()).searchParams.get("code")!;
    assert.equal((await exchange({ code, code_verifier: pkcePair().verifier })).body.error, "invalid_grant");
    const tokens = await exchange({ code, code_verifier: verifier });
    assert.equal(tokens.status, 200);
    assert.ok(tokens.body.access_token);
  });

  it("delivers an implicit access token in the fragment, which the client's server never sees", async () => {
    await chromium.page.goto(authorize({ response_type: "token", scope: "openid email" }));
    await signInWithForm();
    const landed = await landOnCallback();
    const fragment = new URLSearchParams(landed.hash.slice(1));
    assert.ok(fragment.get("access_token"));
    assert.equal(fragment.get("token_type"), "Bearer");
    assert.equal(fragment.get("scope"), "openid email");
    assert.equal(fragment.get("state"), "state-123");
    assert.equal(fragment.get("iss"), server.issuer);
    const seen = callback.requests.at(-1)!;
    assert.equal(seen.search, "");
    assert.equal(seen.hash, "");
  });

  it("skips the form on a second visit while the session lives; prompt=login shows it again", async () => {
    await chromium.page.goto(authorize());
    await signInWithForm();
    await landOnCallback();
    const cookie = (await chromium.context.cookies(server.url)).find((c) => c.name === "identity_session")!;
    assert.equal(cookie.httpOnly, true);
    assert.equal(cookie.sameSite, "Lax");

    await chromium.page.goto(authorize({ state: "second-visit" }));
    const landed = await landOnCallback();
    assert.equal(landed.searchParams.get("state"), "second-visit");
    assert.ok(landed.searchParams.get("code"));

    await chromium.page.goto(authorize({ prompt: "login", state: "forced" }));
    await chromium.page.getByLabel("Password").waitFor();
    await signInWithForm();
    assert.equal((await landOnCallback()).searchParams.get("state"), "forced");
  });

  it("shows an error on a wrong password, without leaving the page", async () => {
    await chromium.page.goto(authorize());
    await signInWithForm(TEST_USER.name, "not-the-password");
    const alert = chromium.page.getByRole("alert");
    assert.equal(await alert.textContent(), "Invalid username or password.");
    assert.ok(chromium.page.url().startsWith(server.url));
    assert.equal(await chromium.page.getByLabel("Username").inputValue(), TEST_USER.name);
    assert.equal(await focusedId(), "password", "focus moves to the password");
    await chromium.page.screenshot({ path: `${SCREENSHOTS}/login-wrong-password.png`, fullPage: true });

    await signInWithForm();
    assert.ok((await landOnCallback()).searchParams.get("code"));
  });
});
