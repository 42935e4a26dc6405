import assert from "node:assert/strict";
import type { Request } from "playwright-core";
import type { RunningServer } from "../../src/app/server.js";
import { authorizeUrl } from "../support/browserless.js";
import { startCallbackServer, type CallbackServer } from "../support/callbackServer.js";
import { useChromium } from "../support/chromium.js";
import { postForm, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

/**
 * response_mode=form_post in headless Chromium (OAuth 2.0 Form Post Response
 * Mode): the page's form reaches the client as a POST under the page's own
 * CSP, submitted by our script, or by its button when script is off.
 */
describe("form_post in headless Chromium", function () {
  this.timeout(60_000);
  // The pages must work under their own CSP: the fixture fails a test whose pages broke it.
  const chromium = useChromium();
  let server: RunningServer;
  let callback: CallbackServer;

  before(async () => {
    callback = await startCallbackServer();
    server = await startTestServer({ config: { applications: [{ ...TEST_APP, redirectUris: [callback.url] }], users: [TEST_USER] } });
  });
  after(async () => {
    await server?.close();
    await callback?.close();
  });

  const authorize = (params: Record<string, string> = {}) =>
    authorizeUrl(server.url, { redirect_uri: callback.url, response_mode: "form_post", ...params });

  async function signIn(): Promise<void> {
    const { page } = chromium;
    await page.getByLabel("Username").fill(TEST_USER.name);
    await page.getByLabel("Password").fill(TEST_USER.password);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
  }

  const postToClient = () => chromium.page.waitForRequest((r) => r.url() === callback.url && r.method() === "POST");
  const fieldsOf = (request: Request) => new URLSearchParams(request.postData() ?? "");

  it("posts the code to the client by itself, with script on", async () => {
    const { page } = chromium;
    await page.goto(authorize());
    const posted = postToClient();
    await signIn();
    const request = await posted;
    assert.match((await request.allHeaders())["content-type"] ?? "", /^application\/x-www-form-urlencoded/);
    const fields = fieldsOf(request);
    assert.equal(fields.get("state"), "state-123");
    assert.equal(fields.get("iss"), server.issuer);
    await page.waitForURL(callback.url);
    assert.equal(await page.locator("h1").textContent(), "Back at the client");
    const tokens = await postForm(
      `${server.url}/api/login/oauth/access_token`,
      { grant_type: "authorization_code", client_id: TEST_APP.clientId, client_secret: TEST_APP.clientSecret, code: fields.get("code")! },
    );
    assert.equal(tokens.status, 200);
  });

  it("posts by its Continue button with script off", async () => {
    const { page } = await chromium.restart({ javaScriptEnabled: false });
    await page.goto(authorize({ response_type: "id_token token", nonce: "n-1" }));
    await signIn();
    await page.getByRole("button", { name: "Continue" }).waitFor();
    const posted = postToClient();
    await page.getByRole("button", { name: "Continue" }).click();
    const fields = fieldsOf(await posted);
    assert.ok(fields.get("access_token"));
    assert.ok(fields.get("id_token"));
    assert.equal(fields.get("state"), "state-123");
  });
});
