import assert from "node:assert/strict";
import type { RunningServer } from "../../src/app/server.js";
import { authorizeUrl } from "../support/browserless.js";
import { startCallbackServer, type CallbackServer } from "../support/callbackServer.js";
import { useChromium } from "../support/chromium.js";
import { startTestServer, TEST_APP, TEST_USER } from "../support/server.js";
import { linkIn, TestSmtpServer } from "../support/smtp.js";

/** Issue 47's proof: sign-up, the verification mail, sign-in, the reset mail and the new password, in Chromium, against a real SMTP server. */
describe("self-service accounts in headless Chromium (issue 47)", function () {
  this.timeout(120_000);
  const chromium = useChromium();
  let smtp: TestSmtpServer;
  let callback: CallbackServer;
  let server: RunningServer;

  before(async () => {
    smtp = await new TestSmtpServer().start();
    callback = await startCallbackServer();
    server = await startTestServer({
      config: { applications: [{ ...TEST_APP, redirectUris: [callback.url], signup: true }], users: [TEST_USER] },
      overrides: { smtpUrl: smtp.url, mailFrom: "Identity <no-reply@identity.test>" },
    });
  });
  after(async () => {
    await server?.close();
    await callback?.close();
    await smtp?.close();
  });

  const authorize = (state: string) => authorizeUrl(server.url, { redirect_uri: callback.url, state });

  async function signInWithForm(username: string, password: string): Promise<void> {
    const { page } = chromium;
    await page.locator("#username").fill(username);
    await page.locator("#password").fill(password);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
  }

  async function landOnCallback(): Promise<URL> {
    await chromium.page.waitForURL((url) => url.href.startsWith(callback.url));
    return new URL(chromium.page.url());
  }

  it("signs up, verifies the email from the mail, signs in and lands on the application with its state", async () => {
    const { page } = chromium;
    await page.goto(authorize("browser-state-1"));
    await page.getByRole("link", { name: "Create account" }).click();
    await page.getByLabel("Username").fill("carol");
    await page.getByLabel("Email").fill("carol@example.com");
    await page.getByLabel(/^Password \(at least/).fill("short");
    await page.getByLabel("Password again").fill("short");
    await page.getByRole("button", { name: "Create account" }).click();
    // The error sits under its own field, and names it.
    assert.match(await page.locator("#password-error").innerText(), /at least 8 characters/);
    await page.getByLabel(/^Password \(at least/).fill("carol-passphrase");
    await page.getByLabel("Password again").fill("carol-passphrase");
    await page.getByRole("button", { name: "Create account" }).click();
    await page.getByRole("heading", { name: "Check your email" }).waitFor();

    const link = linkIn(await smtp.waitFor("carol@example.com", /Verify your email/), `${server.issuer}/email/verify?token=`);
    await page.goto(link);
    await page.getByRole("button", { name: "Verify email" }).click();
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
    await signInWithForm("carol", "carol-passphrase");
    const back = await landOnCallback();
    assert.equal(back.searchParams.get("state"), "browser-state-1");
    assert.ok(back.searchParams.get("code"));
  });

  it("resets a forgotten password from the mail, then signs in with the new one", async () => {
    const { page } = chromium;
    await page.goto(authorize("browser-state-2"));
    await page.getByRole("link", { name: "Forgot password?" }).click();
    await page.getByLabel("User name or email").fill(TEST_USER.email);
    await page.getByRole("button", { name: "Send link" }).click();
    await page.getByRole("heading", { name: "Check your email" }).waitFor();

    const link = linkIn(await smtp.waitFor(TEST_USER.email, /Reset your password/), `${server.issuer}/password/reset?token=`);
    await page.goto(link);
    await page.getByLabel(/^New password \(at least/).fill("alice-new-passphrase");
    await page.getByLabel("New password again").fill("alice-new-passphrase");
    await page.getByRole("button", { name: "Set password" }).click();
    // Back to the application's sign-in, the name filled in; the old password no longer works.
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
    assert.equal(await page.locator("#username").inputValue(), TEST_USER.name);
    await signInWithForm(TEST_USER.name, TEST_USER.password);
    await page.getByRole("alert").waitFor();
    await signInWithForm(TEST_USER.name, "alice-new-passphrase");
    const back = await landOnCallback();
    assert.equal(back.searchParams.get("state"), "browser-state-2");
    await smtp.waitFor(TEST_USER.email, /Your password was changed/);
  });
});
