import assert from "node:assert/strict";
import * as oidc from "openid-client";
import type { RunningServer } from "../../src/app/server.js";
import { startCallbackServer, type CallbackServer } from "../support/callbackServer.js";
import { beginCodeFlow, typePassword } from "../support/browserCodeFlow.js";
import { useChromium } from "../support/chromium.js";
import { startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

/**
 * A user of an `mfa: required` application with no second factor enrols a
 * passkey during the sign-in, in headless Chromium with the DevTools
 * protocol's virtual authenticator, instead of a one-time code; openid-client
 * redeems the code and checks acr and amr. The next sign-in takes that
 * passkey as the second factor. The issuer is http://localhost:<port>:
 * browsers refuse an IP address as relying-party id.
 */
describe("passkey enrolled at sign-in, in headless Chromium (issue #46)", function () {
  // Generous: the machine is shared, and a whole enrolment and a second sign-in run in one test.
  this.timeout(180_000);
  const chromium = useChromium();
  const STRICT = { ...TEST_APP, name: "strict", clientId: "client-strict", clientSecret: "secret-strict-of-client-strict", mfa: "required" };
  let server: RunningServer;
  let callback: CallbackServer;
  let app: oidc.Configuration;

  before(async () => {
    callback = await startCallbackServer();
    server = await startTestServer({
      config: { applications: [{ ...STRICT, redirectUris: [callback.url] }], users: [TEST_USER] },
      overrides: { host: "localhost" },
    });
    assert.match(server.issuer, /^http:\/\/localhost:\d+$/);
    app = await oidc.discovery(new URL(server.issuer), STRICT.clientId, undefined, oidc.ClientSecretBasic(STRICT.clientSecret), { execute: [oidc.allowInsecureRequests] });
  });
  after(async () => {
    await server?.close();
    await callback?.close();
  });

  /** The passkey's values in an amr: its key (hwk, or swk for a synced one), the verified user, and mfa, after the password. */
  function assertPasskeyAmr(amr: string[]): void {
    assert.deepEqual([amr[0], amr.slice(2)], ["pwd", ["user", "mfa"]], `amr ${amr}`);
    assert.ok(amr[1] === "hwk" || amr[1] === "swk", `amr ${amr}`);
  }

  it("enrols a passkey instead of a one-time code (recovery codes once, amr pwd, hwk|swk, user, mfa), then signs in with it as the second factor", async () => {
    const cdp = await chromium.context.newCDPSession(chromium.page);
    await cdp.send("WebAuthn.enable", { enableUI: false });
    const { authenticatorId } = await cdp.send("WebAuthn.addVirtualAuthenticator", {
      options: { protocol: "ctap2", transport: "internal", hasResidentKey: true, hasUserVerification: true, isUserVerified: true },
    });

    let finish = await beginCodeFlow(chromium.page, app, callback.url);
    await typePassword(chromium.page, TEST_USER);
    await chromium.page.getByRole("heading", { name: "Set up two-step verification" }).waitFor();
    await chromium.page.getByRole("button", { name: "Use a passkey instead" }).click();
    await chromium.page.getByRole("heading", { name: "Save your recovery codes" }).waitFor();
    assert.equal(await chromium.page.locator("#recovery-codes li").count(), 10);
    await chromium.page.getByRole("button", { name: "I saved them, continue" }).click();
    let claims = await finish();
    assert.equal(claims.acr, "mfa");
    assertPasskeyAmr(claims.amr as string[]);

    // The authenticator holds the new credential, and the user has it as a passkey and no one-time code.
    const { credentials } = await cdp.send("WebAuthn.getCredentials", { authenticatorId });
    assert.equal(credentials.length, 1);
    const alice = (await server.store.users.findByName(TEST_USER.name))!;
    assert.deepEqual((await server.domain.secondFactors.list(alice.id)).map((f) => f.type), ["passkey"]);
    await server.store.auditWriter.flush();
    const added = (await server.domain.auditEvents({ event: "passkey_added", pageSize: 100 })).events;
    assert.ok(added.some((e) => e.outcome === "success" && e.userId === alice.id));

    // Signed out: the password, then the passkey as the second factor.
    await chromium.context.clearCookies();
    finish = await beginCodeFlow(chromium.page, app, callback.url);
    await typePassword(chromium.page, TEST_USER);
    await chromium.page.getByRole("heading", { name: "Two-step verification" }).waitFor();
    await chromium.page.getByRole("button", { name: "Use a passkey" }).click();
    claims = await finish();
    assert.equal(claims.acr, "mfa");
    assertPasskeyAmr(claims.amr as string[]);
  });
});
