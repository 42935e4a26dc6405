import assert from "node:assert/strict";
import type { RunningServer } from "../../src/app/server.js";
import { authorizeUrl } from "../support/browserless.js";
import { startCallbackServer, type CallbackServer } from "../support/callbackServer.js";
import { useChromium } from "../support/chromium.js";
import { registerClient } from "../support/consents.js";
import { startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

// The DOM is not in this project's TypeScript lib; these run in the page.
declare const document: any;

/** Issue 43 §2: /account/consents in headless Chromium, at phone width and by keyboard alone, under its CSP (the fixture fails any violation). */
describe("/account/consents in headless Chromium", function () {
  this.timeout(120_000);
  const chromium = useChromium();
  let callback: CallbackServer;
  let server: RunningServer;

  before(async () => {
    callback = await startCallbackServer();
    server = await startTestServer({ config: { applications: [TEST_APP], users: [TEST_USER] }, overrides: { clientRegistration: "open" } });
  });
  after(async () => {
    await server?.close();
    await callback?.close();
  });

  it("lists the application the user allowed and revokes it by keyboard at 375 px, with no sideways scroll", async () => {
    const { page } = chromium;
    const agent = await registerClient(server, "Phone agent with a rather long name that must wrap", callback.url);
    await page.setViewportSize({ width: 375, height: 740 });
    await page.goto(authorizeUrl(server.url, { client_id: agent.client_id, redirect_uri: callback.url, scope: "openid email" }));
    await page.getByLabel("Username").fill(TEST_USER.name);
    await page.getByLabel("Password").fill(TEST_USER.password);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.getByRole("button", { name: "Allow", exact: true }).click();
    await page.waitForURL((url) => url.href.startsWith(callback.url));

    await page.goto(`${server.url}/account/consents`);
    await page.getByRole("heading", { level: 1, name: "Applications you allowed" }).waitFor();
    const item = page.getByRole("listitem", { name: /^Phone agent/ });
    assert.match(await item.innerText(), /See your email address/);
    assert.ok((await page.evaluate(() => document.scrollingElement.scrollWidth)) <= 375, "nothing scrolls sideways");

    // Keyboard only: Tab reaches the Revoke button, Enter presses it.
    const revoke = page.getByRole("button", { name: /^Revoke Phone agent/ });
    for (let i = 0; i < 10 && !(await revoke.evaluate((el: any) => el === document.activeElement)); i++) await page.keyboard.press("Tab");
    assert.ok(await revoke.evaluate((el: any) => el === document.activeElement), "Tab reaches Revoke");
    await page.keyboard.press("Enter");
    await page.getByRole("status").filter({ hasText: "no longer has access to your account" }).waitFor();
    assert.match(await page.locator("main").innerText(), /You have not allowed any application yet/);

    // The next authorization asks again.
    await page.goto(authorizeUrl(server.url, { client_id: agent.client_id, redirect_uri: callback.url, scope: "openid" }));
    await page.getByRole("button", { name: "Allow", exact: true }).waitFor();
  });
});
