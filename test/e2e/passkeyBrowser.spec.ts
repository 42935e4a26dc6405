import assert from "node:assert/strict";
import * as oidc from "openid-client";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { UserAdminService } from "../../gen/identity/v1/admin_pb.js";
import type { RunningServer } from "../../src/app/server.js";
import type { AuditEvent } from "../../src/shared/audit.js";
import { startCallbackServer, type CallbackServer } from "../support/callbackServer.js";
import { beginCodeFlow, typePassword } from "../support/browserCodeFlow.js";
import { useChromium } from "../support/chromium.js";
import { ADMIN_TOKEN, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

// Read inside the page (page.evaluate), where the DOM is.
declare const document: { activeElement: unknown; documentElement: { scrollWidth: number } };

/**
 * Passkeys end to end (issue #46 §2) in headless Chromium with the DevTools
 * protocol's virtual authenticator: added on /account/passkeys, then a whole
 * sign-in with no user name, and a second factor after the password;
 * openid-client redeems each code and checks acr and amr. The issuer is
 * http://localhost:<port>: browsers refuse an IP address as relying-party id.
 */
describe("passkeys in headless Chromium (issue #46)", function () {
  this.timeout(90_000);
  const chromium = useChromium();
  let server: RunningServer;
  let callback: CallbackServer;
  let app: oidc.Configuration;

  before(async () => {
    callback = await startCallbackServer();
    server = await startTestServer({
      config: { applications: [{ ...TEST_APP, redirectUris: [callback.url] }], users: [TEST_USER] },
      overrides: { host: "localhost" },
    });
    assert.match(server.issuer, /^http:\/\/localhost:\d+$/);
    app = await oidc.discovery(new URL(server.issuer), TEST_APP.clientId, undefined, oidc.ClientSecretBasic(TEST_APP.clientSecret), { execute: [oidc.allowInsecureRequests] });
  });
  after(async () => {
    await server?.close();
    await callback?.close();
  });

  /** The page's virtual authenticator: a platform passkey with user verification (CTAP2, resident keys). */
  async function addAuthenticator(): Promise<void> {
    const cdp = await chromium.context.newCDPSession(chromium.page);
    await cdp.send("WebAuthn.enable", { enableUI: false });
    await cdp.send("WebAuthn.addVirtualAuthenticator", {
      options: { protocol: "ctap2", transport: "internal", hasResidentKey: true, hasUserVerification: true, isUserVerified: true },
    });
  }

  const events = async (name: string): Promise<AuditEvent[]> => {
    await server.store.auditWriter.flush();
    return (await server.domain.auditEvents({ pageSize: 1000 })).events.filter((e) => e.event === name);
  };

  it("adds a passkey on /account/passkeys, then signs in with it and no user name: acr mfa, amr hwk|swk, user, mfa", async () => {
    await addAuthenticator();
    // Signed in by password first: the account page is behind the browser session.
    let finish = await beginCodeFlow(chromium.page, app, callback.url);
    await typePassword(chromium.page, TEST_USER);
    assert.deepEqual((await finish()).amr, ["pwd"]);
    await chromium.page.goto(`${server.issuer}/account/passkeys`);
    await chromium.page.getByText("You have no passkeys yet.").waitFor();
    await chromium.page.getByLabel("Name for the new passkey").fill("Laptop");
    await chromium.page.getByRole("button", { name: "Add a passkey" }).click();
    // The first factor brings the recovery codes, shown once.
    await chromium.page.getByRole("heading", { name: "Save your recovery codes" }).waitFor();
    assert.equal(await chromium.page.locator("#recovery-codes li").count(), 10);
    await chromium.page.getByRole("link", { name: "I saved them, continue" }).click();
    await chromium.page.locator("#passkeys li").filter({ hasText: "Laptop" }).waitFor();
    assert.match(await chromium.page.locator("#passkeys time").textContent() ?? "", /^\d{4}-\d{2}-\d{2}$/);
    assert.equal((await events("passkey_added")).filter((e) => e.outcome === "success").length, 1);

    // Signed out; the login page's passkey button signs in without a user name.
    await chromium.context.clearCookies();
    finish = await beginCodeFlow(chromium.page, app, callback.url);
    await chromium.page.getByRole("button", { name: "Sign in with a passkey" }).click();
    const claims = await finish();
    assert.equal(claims.acr, "mfa");
    const amr = claims.amr as string[];
    assert.ok(amr.includes("hwk") || amr.includes("swk"), `amr ${amr}`);
    assert.ok(amr.includes("user") && amr.includes("mfa") && !amr.includes("pwd"), `amr ${amr}`);
    assert.ok((await events("factor_used")).some((e) => e.outcome === "success" && e.details?.type === "passkey"));
  });

  it("takes the passkey as the second factor after the password: amr pwd, hwk|swk, user, mfa", async () => {
    await addAuthenticator();
    let finish = await beginCodeFlow(chromium.page, app, callback.url);
    await typePassword(chromium.page, TEST_USER);
    await chromium.page.getByRole("heading", { name: "Two-step verification" }).waitFor();
    // A new profile holds no passkey: add one first (the session is signed in by password and a recovery code).
    const codes = await freshRecoveryCode();
    await chromium.page.getByLabel("Code from your authenticator app, or a recovery code").fill(codes);
    await chromium.page.getByRole("button", { name: "Verify" }).click();
    await finish();
    await chromium.page.goto(`${server.issuer}/account/passkeys`);
    await chromium.page.getByLabel("Name for the new passkey").fill("Phone");
    await chromium.page.getByRole("button", { name: "Add a passkey" }).click();
    await chromium.page.getByRole("status").filter({ hasText: "Passkey added." }).waitFor();

    await chromium.context.clearCookies();
    finish = await beginCodeFlow(chromium.page, app, callback.url);
    await typePassword(chromium.page, TEST_USER);
    await chromium.page.getByRole("button", { name: "Use a passkey" }).click();
    const claims = await finish();
    assert.equal(claims.acr, "mfa");
    const amr = claims.amr as string[];
    assert.deepEqual([amr[0], amr.slice(2)], ["pwd", ["user", "mfa"]]);
    assert.ok(amr[1] === "hwk" || amr[1] === "swk", `amr ${amr}`);
  });

  it("renames and removes a passkey by keyboard, 375 px wide with no horizontal scroll", async () => {
    await chromium.page.setViewportSize({ width: 375, height: 800 });
    let finish = await beginCodeFlow(chromium.page, app, callback.url);
    await typePassword(chromium.page, TEST_USER);
    await chromium.page.getByLabel("Code from your authenticator app, or a recovery code").fill(await freshRecoveryCode());
    await chromium.page.getByRole("button", { name: "Verify" }).click();
    await finish();
    await chromium.page.goto(`${server.issuer}/account/passkeys`);
    assert.ok(await chromium.page.evaluate(() => document.documentElement.scrollWidth <= 375), "no horizontal scroll");
    // Tab reaches the first passkey's name field; typing and Enter renames it.
    const first = chromium.page.getByLabel("New name for Laptop");
    for (let i = 0; i < 20 && !(await first.evaluate((el) => el === document.activeElement)); i++) await chromium.page.keyboard.press("Tab");
    assert.ok(await first.evaluate((el) => el === document.activeElement), "Tab reaches the rename field");
    await chromium.page.keyboard.press("Control+A");
    await chromium.page.keyboard.type("Work laptop");
    await chromium.page.keyboard.press("Enter");
    await chromium.page.getByRole("status").filter({ hasText: "Passkey renamed." }).waitFor();
    // Remove: Tab to its button, Space; then confirm with Enter.
    const remove = chromium.page.getByRole("button", { name: "Remove Work laptop" });
    for (let i = 0; i < 20 && !(await remove.evaluate((el) => el === document.activeElement)); i++) await chromium.page.keyboard.press("Tab");
    await chromium.page.keyboard.press("Space");
    await chromium.page.getByRole("heading", { name: "Remove Work laptop?" }).waitFor();
    await chromium.page.keyboard.press("Enter");
    await chromium.page.getByRole("status").filter({ hasText: "Passkey removed." }).waitFor();
    assert.equal(await chromium.page.locator("#passkeys li").filter({ hasText: "Work laptop" }).count(), 0);
    assert.ok((await events("passkey_removed")).some((e) => e.outcome === "success"));
  });

  it("asks a browser with no session to sign in, and refuses a post without this browser's form token", async () => {
    const page = await chromium.page.goto(`${server.issuer}/account/passkeys`);
    assert.equal(page?.status(), 200);
    await chromium.page.getByRole("button", { name: "Sign in", exact: true }).waitFor();
    const res = await fetch(`${server.issuer}/account/passkeys/options`, { method: "POST", body: new URLSearchParams({ csrf_token: "x".repeat(43) }) });
    assert.equal(res.status, 403);
  });

  it("shows an admin the user's passkeys (type, name, created), and removes one for a lost device", async () => {
    const admin = createClient(UserAdminService, createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" }));
    const headers = { authorization: `Bearer ${ADMIN_TOKEN}` };
    const { factors } = await admin.listUserFactors({ user: TEST_USER.name }, { headers });
    assert.deepEqual(factors.map((f) => [f.type, f.name]), [["passkey", "Phone"]]);
    assert.ok(factors[0]!.createdTime > 0n);
    await admin.removeUserFactor({ user: TEST_USER.name, factorId: factors[0]!.id }, { headers });
    assert.deepEqual((await admin.listUserFactors({ user: TEST_USER.name }, { headers })).factors, []);
    assert.ok((await events("passkey_removed")).some((e) => e.actor.kind === "admin" && e.details?.factorId === factors[0]!.id));
  });

  /** A recovery code of alice's that no test used yet, made afresh through the domain (the codes the first test saw were shown once). */
  async function freshRecoveryCode(): Promise<string> {
    const alice = (await server.store.users.findByName(TEST_USER.name))!;
    return (await server.domain.secondFactors.newRecoveryCodes(alice))[0]!;
  }
});
