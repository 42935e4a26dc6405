import assert from "node:assert/strict";
import * as oidc from "openid-client";
import type { RunningServer } from "../../src/app/server.js";
import { totpCode } from "../../src/oauth/factors/totp.js";
import { startCallbackServer, type CallbackServer } from "../support/callbackServer.js";
import { beginCodeFlow, typePassword } from "../support/browserCodeFlow.js";
import { useChromium } from "../support/chromium.js";
import { startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

/**
 * One-time codes, recovery codes, `mfa: required` enrolment and step-up by
 * acr_values, clicked through in headless Chromium; openid-client (a strict
 * relying party) redeems each code and checks acr and amr.
 */
describe("second factor in headless Chromium (issue #46)", function () {
  this.timeout(60_000);
  const chromium = useChromium();
  let server: RunningServer;
  let callback: CallbackServer;
  let optionalApp: oidc.Configuration;
  let strictApp: oidc.Configuration;
  const STRICT = { ...TEST_APP, name: "strict", clientId: "client-strict", clientSecret: "secret-strict-of-client-strict", mfa: "required" };

  before(async () => {
    callback = await startCallbackServer();
    server = await startTestServer({
      config: {
        applications: [{ ...TEST_APP, redirectUris: [callback.url] }, { ...STRICT, redirectUris: [callback.url] }],
        users: [TEST_USER],
      },
    });
    const discover = (app: typeof TEST_APP) =>
      oidc.discovery(new URL(server.issuer), app.clientId, undefined, oidc.ClientSecretBasic(app.clientSecret), { execute: [oidc.allowInsecureRequests] });
    optionalApp = await discover(TEST_APP);
    strictApp = await discover(STRICT);
  });
  after(async () => {
    await server?.close();
    await callback?.close();
  });

  /** A code for a step no earlier code of this secret took. */
  let lastStepUsed = 0;
  function freshCode(secret: string): string {
    let at = Date.now();
    while (Math.floor(at / 30_000) <= lastStepUsed) at += 30_000;
    lastStepUsed = Math.floor(at / 30_000);
    return totpCode(secret, at);
  }

  let secret = "";
  let recoveryCodes: string[] = [];

  it("mfa required: enrols a one-time code during sign-in from the shown secret, shows recovery codes once, then issues the code", async () => {
    const finish = await beginCodeFlow(chromium.page, strictApp, callback.url);
    await typePassword(chromium.page, TEST_USER);
    await chromium.page.getByRole("heading", { name: "Set up two-step verification" }).waitFor();
    assert.ok(await chromium.page.locator("img.qr").evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth > 0), "the QR code draws");
    await chromium.page.getByText("Cannot scan? Type the key instead").click();
    secret = (await chromium.page.locator("#totp-secret").textContent())!.trim();
    await chromium.page.getByLabel("Code from your authenticator app").fill("000000");
    await chromium.page.getByRole("button", { name: "Turn on" }).click();
    await chromium.page.getByRole("alert").waitFor();
    await chromium.page.getByLabel("Code from your authenticator app").fill(freshCode(secret));
    await chromium.page.getByRole("button", { name: "Turn on" }).click();
    await chromium.page.getByRole("heading", { name: "Save your recovery codes" }).waitFor();
    recoveryCodes = (await chromium.page.locator("#recovery-codes li").allTextContents()).map((c) => c.trim());
    assert.equal(recoveryCodes.length, 10);
    await chromium.page.getByRole("button", { name: "I saved them, continue" }).click();
    const claims = await finish();
    assert.equal(claims.acr, "mfa");
    assert.deepEqual(claims.amr, ["pwd", "otp", "mfa"]);
  });

  it("asks for the one-time code after the password, by keyboard alone", async () => {
    const finish = await beginCodeFlow(chromium.page, optionalApp, callback.url);
    await typePassword(chromium.page, TEST_USER);
    await chromium.page.getByRole("heading", { name: "Two-step verification" }).waitFor();
    // The code field has the focus; Enter submits.
    await chromium.page.keyboard.type(freshCode(secret));
    await chromium.page.keyboard.press("Enter");
    const claims = await finish();
    assert.deepEqual([claims.acr, claims.amr], ["mfa", ["pwd", "otp", "mfa"]]);
  });

  it("takes a recovery code instead, once", async () => {
    let finish = await beginCodeFlow(chromium.page, optionalApp, callback.url);
    await typePassword(chromium.page, TEST_USER);
    await chromium.page.getByLabel("Code from your authenticator app, or a recovery code").fill(recoveryCodes[0]!);
    await chromium.page.getByRole("button", { name: "Verify" }).click();
    assert.equal((await finish()).acr, "mfa");
    await chromium.context.clearCookies();
    finish = await beginCodeFlow(chromium.page, optionalApp, callback.url);
    await typePassword(chromium.page, TEST_USER);
    await chromium.page.getByLabel("Code from your authenticator app, or a recovery code").fill(recoveryCodes[0]!);
    await chromium.page.getByRole("button", { name: "Verify" }).click();
    await chromium.page.getByRole("alert").waitFor();
    assert.match(await chromium.page.getByRole("alert").textContent() ?? "", /not valid/);
  });

  it("step-up: a password-only session is asked for the code when acr_values=mfa", async () => {
    // A user with no factor signs in with the password alone...
    await server.domain.userAdmin.create({ name: "stepper", password: "pw-stepper-123" } as never);
    let finish = await beginCodeFlow(chromium.page, optionalApp, callback.url);
    await chromium.page.getByLabel("Username").fill("stepper");
    await chromium.page.getByLabel("Password").fill("pw-stepper-123");
    await chromium.page.getByRole("button", { name: "Sign in", exact: true }).click();
    assert.deepEqual((await finish()).amr, ["pwd"]);
    // ...then an application asks for more: the session is kept, the factor is asked for (enrolled here).
    finish = await beginCodeFlow(chromium.page, optionalApp, callback.url, { acr_values: "mfa" });
    await chromium.page.getByRole("heading", { name: "Set up two-step verification" }).waitFor();
    await chromium.page.getByText("Cannot scan? Type the key instead").click();
    const stepperSecret = (await chromium.page.locator("#totp-secret").textContent())!.trim();
    await chromium.page.getByLabel("Code from your authenticator app").fill(totpCode(stepperSecret, Date.now()));
    await chromium.page.getByRole("button", { name: "Turn on" }).click();
    await chromium.page.getByRole("button", { name: "I saved them, continue" }).click();
    const claims = await finish();
    assert.deepEqual([claims.acr, claims.amr], ["mfa", ["pwd", "otp", "mfa"]]);
  });
});
