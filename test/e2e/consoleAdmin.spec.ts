import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import type { Page } from "playwright-core";
import { ApplicationAdminService, UserAdminService } from "../../gen/identity/v1/admin_pb.js";
import * as choices from "../../console/src/choices.js";
import type { RunningServer } from "../../src/app/server.js";
import { PROVIDER_TYPES } from "../../src/federation/providerTypes/index.js";
import { PROVIDER_TOKEN_AUTH_METHODS, SIGNING_ALGS } from "../../src/shared/model.js";
import { authorizeUrl } from "../support/browserless.js";
import type { CallbackServer } from "../support/callbackServer.js";
import { passwordTokens, refresh, TOKEN_PATH } from "../support/oauth.js";
import { ADMIN_TOKEN, basicAuth, postForm, TEST_APP, TEST_USER } from "../support/server.js";
import { ROOT, SHOTS, useConsoleSuite } from "../support/consoleSuite.js";

// The DOM is not in this project's TypeScript lib; these run in the page.
declare const document: any;
declare function getComputedStyle(element: unknown): { outlineStyle: string; overflowX: string; borderBottomStyle: string };

/**
 * The admin console at /admin in Debian's headless Chromium, against the real
 * server: sign-in through the service itself, every page, and what an
 * administrator does there. Every page must keep to its CSP.
 */
describe("admin console in headless Chromium: users, applications, sessions, keys, and for everyone", function () {
  this.timeout(90_000);
  const suite = useConsoleSuite();
  const { chromium, signInToConsole, inputsHolding, openPage, newApplicationDialog, dismissShownSecret } = suite;
  let server: RunningServer;
  let upstream: CallbackServer;
  let page: Page;
  beforeEach(() => {
    ({ server, upstream, page } = suite);
  });

  it("manages users: create, search, disable, set a password, delete", async () => {
    await signInToConsole(ROOT);
    await openPage("Users");
    await page.getByRole("button", { name: "New user" }).click();
    const dialog = page.getByRole("dialog", { name: "New user" });
    await dialog.getByLabel("Name", { exact: true }).fill("carol");
    await dialog.getByLabel("Password", { exact: true }).fill("pw-carol-123");
    await dialog.getByLabel("Display name", { exact: true }).fill("Carol C");
    await dialog.getByLabel("Email", { exact: true }).fill("carol@example.com");
    await dialog.getByRole("button", { name: "Create" }).click();
    await dialog.waitFor({ state: "detached" });

    await page.getByLabel("Search", { exact: true }).fill("carol@");
    await page.getByRole("button", { name: "Search", exact: true }).click();
    await page.waitForFunction(() => document.querySelectorAll("tbody tr").length === 1);
    assert.match((await page.locator("tbody tr").textContent())!, /carol.*Carol C.*carol@example\.com.*Active/);

    await page.getByRole("button", { name: "Disable carol" }).click();
    await page.getByRole("button", { name: "Enable carol" }).waitFor();
    assert.equal((await server.store.users.findByName("carol"))?.disabled, true);

    await page.getByRole("button", { name: "Set password of carol" }).click();
    const pw = page.getByRole("dialog", { name: "Set password of carol" });
    await pw.getByLabel("New password", { exact: true }).fill("pw-carol-456-new");
    await pw.getByRole("button", { name: "Set password" }).click();
    await pw.waitFor({ state: "detached" });

    await page.getByRole("button", { name: "Delete carol" }).click();
    await page.getByRole("dialog", { name: "Delete user" }).getByRole("button", { name: "Delete" }).click();
    await page.getByText("No users found.").waitFor();
    assert.equal(await server.store.users.findByName("carol"), undefined);

    // The audit trail names the administrator who made each change.
    await openPage("Events");
    await page.getByLabel("Event", { exact: true }).fill("user_created");
    await page.getByRole("button", { name: "Filter" }).click();
    const created = page.locator("tbody tr").filter({ hasText: "user_created" }).filter({ hasText: "carol" });
    await created.first().waitFor();
    assert.match((await created.first().textContent())!, new RegExp(`user_created.*success.*${ROOT.name}`));
  });

  it("creates an application whose client secret is shown once, and rotates it", async () => {
    const dialog = await newApplicationDialog("reports", "https://reports.example.com/callback\nhttps://reports.example.com/other");
    await dialog.getByRole("group", { name: "Grant types" }).getByLabel("client_credentials").check();
    await dialog.getByLabel("Token lifetime (hours)", { exact: true }).fill("2");
    await dialog.getByLabel("Signing algorithm", { exact: true }).selectOption("ES256");
    await dialog.getByRole("button", { name: "Create" }).click();
    const first = await dismissShownSecret("reports");
    assert.ok(first.length >= 16, first);
    assert.ok(!(await page.content()).includes(first), "shown once, then gone");
    assert.equal(await inputsHolding(first), 0, "no field holds it either (a value is not in the page's HTML)");
    const stored = await server.store.applications.findByName("reports");
    assert.deepEqual(stored?.redirectUris, ["https://reports.example.com/callback", "https://reports.example.com/other"]);
    assert.equal(stored?.expireInHours, 2);
    assert.equal(stored?.signingAlg, "ES256");
    const clientCredentials = (secret: string) =>
      postForm(server.url + TOKEN_PATH, { grant_type: "client_credentials" }, { authorization: basicAuth(stored!.clientId, secret) });
    assert.equal((await clientCredentials(first)).status, 200);

    await page.getByRole("button", { name: "Rotate the secret of reports" }).click();
    await page.getByRole("dialog", { name: "Rotate client secret" }).getByRole("button", { name: "Rotate" }).click();
    const second = await dismissShownSecret("reports");
    assert.notEqual(second, first);
    assert.equal(await inputsHolding(second), 0, "the rotated secret is gone too");
    // Focus goes back to the row's button that began it all, not to the page's start.
    assert.equal(await page.evaluate(() => document.activeElement?.getAttribute("aria-label") as string), "Rotate the secret of reports");
    assert.equal((await clientCredentials(second)).status, 200);
    assert.equal((await clientCredentials(first)).status, 401, "the old secret stops working");
  });

  it("creates a public client with no secret, then turns it confidential and shows its new secret once", async () => {
    const dialog = await newApplicationDialog("spa", "https://spa.example.com/callback");
    await dialog.getByLabel("Public client (no secret: single-page or native app, PKCE)", { exact: true }).check();
    await dialog.getByRole("button", { name: "Create" }).click();
    await dialog.waitFor({ state: "detached" });
    const row = page.getByRole("row").filter({ hasText: "https://spa.example.com/callback" });
    await row.filter({ hasText: "Public: no secret" }).waitFor();
    assert.equal(await page.getByRole("dialog").count(), 0, "no secret shown for a public client");
    assert.equal(await row.getByRole("button", { name: "Rotate the secret of spa" }).count(), 0, "nothing to rotate");
    assert.equal((await server.store.applications.findByName("spa"))?.publicClient, true);

    await page.getByRole("button", { name: "Edit spa" }).click();
    const edit = page.getByRole("dialog", { name: "Edit application spa" });
    const publicBox = edit.getByLabel("Public client (no secret: single-page or native app, PKCE)", { exact: true });
    assert.equal(await publicBox.isChecked(), true);
    await publicBox.uncheck();
    await edit.getByRole("group", { name: "Grant types" }).getByLabel("client_credentials").check();
    await edit.getByRole("button", { name: "Save" }).click();
    const secret = await dismissShownSecret("spa");
    assert.ok(secret.length >= 16, secret);
    assert.equal(await inputsHolding(secret), 0, "shown once, then gone");
    await row.filter({ hasText: "Confidential" }).getByRole("button", { name: "Rotate the secret of spa" }).waitFor();
    const stored = await server.store.applications.findByName("spa");
    assert.equal(stored?.publicClient, false);
    const token = await postForm(server.url + TOKEN_PATH, { grant_type: "client_credentials" }, { authorization: basicAuth(stored!.clientId, secret) });
    assert.equal(token.status, 200, "the secret shown is the one that works");
  });

  it("shows a user's sessions and refresh tokens, and revokes each", async () => {
    const tokens = await passwordTokens(server, { scope: "openid offline_access" });
    assert.ok(tokens.refresh_token);
    await signInToConsole(ROOT);
    await openPage("Users");
    await page.getByRole("button", { name: "Sessions of alice" }).or(page.getByRole("link", { name: "Sessions of alice" })).click();
    await page.getByRole("heading", { level: 1, name: "Sessions" }).waitFor();
    assert.equal(await page.getByLabel("User", { exact: true }).inputValue(), TEST_USER.name);
    const refreshRows = page.getByRole("region", { name: `Refresh tokens of ${TEST_USER.name}` }).locator("tbody tr");
    await refreshRows.first().waitFor();
    assert.match((await refreshRows.first().textContent())!, new RegExp(TEST_APP.name));
    const count = await refreshRows.count();
    await refreshRows.first().getByRole("button", { name: /^Revoke refresh token/ }).click();
    await page.getByRole("dialog", { name: "Revoke" }).getByRole("button", { name: "Revoke" }).click();
    await page.waitForFunction(
      (n) => document.querySelectorAll("[aria-labelledby=refresh-tokens] tbody tr").length === n - 1,
      count,
    );
    if (count === 1) assert.notEqual((await refresh(server, tokens.refresh_token!)).status, 200, "the revoked token no longer refreshes");

    // A browser session of alice's, from signing in at the application's login page elsewhere.
    const sessionRows = page.getByRole("region", { name: `Sessions of ${TEST_USER.name}` }).locator("tbody tr");
    const sessionsBefore = await sessionRows.count();
    const elsewhere = await chromium.newProfile();
    try {
      await elsewhere.page.goto(authorizeUrl(server.url, { redirect_uri: upstream.url }));
      await elsewhere.page.getByLabel("Username").fill(TEST_USER.name);
      await elsewhere.page.getByLabel("Password").fill(TEST_USER.password);
      await elsewhere.page.getByRole("button", { name: "Sign in", exact: true }).click();
      await elsewhere.page.waitForURL((url) => url.href.startsWith(upstream.url));
    } finally {
      await elsewhere.context.close();
    }
    // Asked again for the same user, the page loads the sessions again.
    await page.getByRole("button", { name: "Show sessions" }).click();
    await page.waitForFunction(
      (n) => document.querySelectorAll("[aria-labelledby=browser-sessions] tbody tr").length === n + 1,
      sessionsBefore,
    );
    await page.getByRole("button", { name: `Revoke all of ${TEST_USER.name}` }).click();
    await page.getByRole("dialog", { name: "Revoke" }).getByRole("button", { name: "Revoke" }).click();
    await page.getByRole("status").filter({ hasText: new RegExp(`Ended [1-9]\\d* sessions? and \\d+ refresh tokens? of ${TEST_USER.name}`) }).waitFor();
    await page.getByText("No active sessions.").waitFor();
    await page.getByText("No live refresh tokens.").waitFor();
    assert.notEqual((await refresh(server, tokens.refresh_token!)).status, 200, "the API's refresh token ended with the rest");

    // Back in the browser's history: the page follows the address to the user it named before.
    await page.goto(`${server.url}/admin/#/sessions?user=${ROOT.name}`);
    await page.getByRole("heading", { level: 2, name: `Sessions of ${ROOT.name}` }).waitFor();
    await page.goBack();
    await page.getByRole("heading", { level: 2, name: `Sessions of ${TEST_USER.name}` }).waitFor();
    assert.equal(await page.getByLabel("User", { exact: true }).inputValue(), TEST_USER.name);
  });

  it("pages through the users a search finds", async () => {
    const users = createClient(UserAdminService, createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" }));
    const auth = { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } };
    for (let i = 0; i < 23; i++) await users.createUser({ user: { name: `pager-${String(i).padStart(2, "0")}`, password: "pw-pager-123" } }, auth);
    await signInToConsole(ROOT);
    await openPage("Users");
    await page.getByLabel("Search", { exact: true }).fill("PAGER-");
    await page.getByRole("button", { name: "Search", exact: true }).click();
    const pager = page.getByRole("navigation", { name: "Pages of users" });
    await pager.getByText("Page 1 of 2 · 23 users").waitFor();
    const names = () => page.locator("tbody tr td:first-child").allTextContents();
    assert.deepEqual(await names(), Array.from({ length: 20 }, (_, i) => `pager-${String(i).padStart(2, "0")}`));
    // By keyboard: Enter on Next; focus stays on it on the last page, where it is marked disabled.
    await pager.getByRole("button", { name: "Next" }).focus();
    await page.keyboard.press("Enter");
    await pager.getByText("Page 2 of 2 · 23 users").waitFor();
    assert.deepEqual(await names(), ["pager-20", "pager-21", "pager-22"]);
    assert.equal(await pager.getByRole("button", { name: "Next" }).getAttribute("aria-disabled"), "true");
    assert.equal(await page.evaluate(() => document.activeElement?.textContent as string), "Next");
    await page.keyboard.press("Enter");
    assert.equal(await pager.getByText("Page 2 of 2 · 23 users").count(), 1, "no page after the last");
    await pager.getByRole("button", { name: "Previous" }).click();
    await pager.getByText("Page 1 of 2 · 23 users").waitFor();
  });

  it("lists signing keys by kid and alg, and rotates one algorithm's key", async () => {
    await signInToConsole(ROOT);
    await openPage("Signing keys");
    const kids = async () => (await page.locator("tbody tr td:first-child").allTextContents()).filter(Boolean);
    await page.locator("tbody tr").first().waitFor();
    const before = await kids();
    assert.ok(before.length >= 1);
    await page.getByLabel("Algorithm", { exact: true }).selectOption("ES256");
    await page.getByRole("button", { name: "Rotate key" }).click();
    await page.getByRole("status").waitFor();
    await page.waitForFunction((n) => document.querySelectorAll("tbody tr").length > n, before.length);
    const newest = page.locator("tbody tr").filter({ hasText: "ES256" }).first();
    const kid = (await newest.locator("td").first().textContent())!;
    assert.ok(!before.includes(kid));
    assert.match((await page.getByRole("status").textContent())!, new RegExp(kid));
  });

  it("has a label for every form control, named as the field is", async () => {
    await signInToConsole(ROOT);
    await page.getByRole("button", { name: "New provider" }).click();
    const labels = await page.evaluate(() =>
      [...document.querySelectorAll("dialog input, dialog select, dialog textarea")].map((control: any) => {
        const label = document.querySelector(`label[for="${control.id}"]`);
        return { id: control.id as string, label: (label?.textContent ?? null) as string | null };
      }),
    );
    for (const { id, label } of labels) assert.ok(label, `${id} has a <label for>`);
    const names = labels.map((l) => l.label);
    for (const name of ["Name", "Display name", "Type", "Client ID", "Client Secret", "Auth URL", "Scope", "Token URL", "UserInfo URL", "Favicon", "Issuer"]) {
      assert.ok(names.includes(name), `a field labelled ${name}`);
    }
  });

  it("labels every control of every page and form with a <label for>", async () => {
    await signInToConsole(ROOT);
    const unlabelled = () =>
      page.evaluate(() =>
        [...document.querySelectorAll("input, select, textarea")]
          .filter((control: any) => !control.id || !document.querySelector(`label[for="${control.id}"]`)?.textContent?.trim())
          .map((control: any) => control.outerHTML as string),
      );
    const forms: Record<string, string[]> = { Applications: ["New application"], Users: ["New user"], "Signing keys": [], Sessions: [], Events: [], Settings: [] };
    for (const [title, dialogs] of Object.entries(forms)) {
      await openPage(title);
      assert.deepEqual(await unlabelled(), [], title);
      for (const name of dialogs) {
        await page.getByRole("button", { name }).click();
        await page.getByRole("dialog", { name }).waitFor();
        assert.deepEqual(await unlabelled(), [], name);
        await page.keyboard.press("Escape");
        await page.getByRole("dialog").waitFor({ state: "detached" });
      }
    }
  });

  /**
   * What scrolls sideways at this width: the page itself beyond the viewport,
   * and every element that scrolls its own overflow (overflow-x auto or
   * scroll) and has more to show than its box.
   */
  const sideways = () =>
    page.evaluate(() => {
      const scrollers = [...document.querySelectorAll("*")]
        .filter((el: any) => ["auto", "scroll"].includes(getComputedStyle(el).overflowX) && el.scrollWidth > el.clientWidth)
        .map((el: any) => `${el.tagName.toLowerCase()}.${el.className} ${el.scrollWidth}>${el.clientWidth}`);
      return { pageWidth: document.scrollingElement.scrollWidth as number, scrollers: scrollers as string[] };
    });

  it("reads at 375 px: tables as cards, nothing scrolls sideways, not even inside its own box", async () => {
    // Long values, as real ones are: they must wrap, not push.
    const apps = createClient(ApplicationAdminService, createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" }));
    await apps.createApplication({ application: {
      name: "a-rather-long-application-name-that-goes-on.example",
      redirectUris: ["https://a-very-long-host-name.of-some-customer.example.com/oauth2/callback/with/a/deep/path?and=query", "http://127.0.0.1:45678/cb"],
      grantTypes: ["authorization_code", "refresh_token", "client_credentials", "password"],
      allowedOrigins: ["https://a-very-long-host-name.of-some-customer.example.com"],
    } }, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    await page.setViewportSize({ width: 375, height: 740 });
    await signInToConsole(ROOT);
    mkdirSync(SHOTS, { recursive: true });
    const pages = { Providers: "", Applications: "", Users: "", "Signing keys": "", Sessions: `#/sessions?user=${ROOT.name}`, Events: "", Settings: "" };
    for (const [title, route] of Object.entries(pages)) {
      if (route) await page.goto(`${server.url}/admin/${route}`);
      else await openPage(title);
      await page.getByRole("heading", { level: 1, name: title, exact: true }).waitFor();
      // Measured with the page's rows drawn, not while it still says Loading…
      await page.getByText("Loading…").waitFor({ state: "detached" });
      if (title !== "Settings") await page.locator("main tbody tr").first().waitFor();
      const seen = await sideways();
      assert.ok(seen.pageWidth <= 375, `${title}: the page is ${seen.pageWidth}px wide`);
      assert.deepEqual(seen.scrollers, [], `${title}: nothing scrolls sideways in its own box`);
      await page.screenshot({ path: `${SHOTS}/phone-${title.toLowerCase().replace(/\W+/g, "-")}.png`, fullPage: true });
    }
    // A row is a card: each cell names its column, and the cells stack.
    await openPage("Applications");
    const card = page.getByRole("row").filter({ hasText: "a-rather-long-application-name" });
    const cells = card.getByRole("cell");
    assert.equal(await cells.first().getAttribute("data-label"), "Name");
    const [name, clientId] = [(await cells.nth(0).boundingBox())!, (await cells.nth(1).boundingBox())!];
    assert.ok(clientId.y >= name.y + name.height - 1, "the second cell is below the first, not beside it");
    assert.ok((await card.boundingBox())!.width <= 375);
    assert.equal(await page.getByRole("columnheader", { name: "Redirect URIs" }).count(), 1, "the column names stay for screen readers");

    for (const [title, button, dialogName] of [
      ["Providers", "New provider", "New provider"],
      ["Applications", "Edit a-rather-long-application-name-that-goes-on.example", "Edit application a-rather-long-application-name-that-goes-on.example"],
      ["Users", "New user", "New user"],
    ] as const) {
      await openPage(title);
      await page.getByRole("button", { name: button }).click();
      const dialog = page.getByRole("dialog", { name: dialogName });
      await dialog.waitFor();
      const box = (await dialog.boundingBox())!;
      assert.ok(box.x >= 0 && box.x + box.width <= 375, `the dialog fits: ${JSON.stringify(box)}`);
      const seen = await sideways();
      assert.ok(seen.pageWidth <= 375, `${dialogName}: the page is ${seen.pageWidth}px wide`);
      assert.deepEqual(seen.scrollers, [], `${dialogName}: nothing scrolls sideways`);
      await page.screenshot({ path: `${SHOTS}/phone-dialog-${title.toLowerCase()}.png` });
      await page.keyboard.press("Escape");
      await dialog.waitFor({ state: "detached" });
    }
  });

  it("works with the keyboard alone: links, buttons, focus shown, dialogs that take and give back focus", async () => {
    await signInToConsole(ROOT);
    const focused = () =>
      page.evaluate(() => ({
        text: document.activeElement?.textContent?.trim() as string | undefined,
        tag: document.activeElement?.tagName as string | undefined,
        inDialog: !!document.activeElement?.closest("dialog"),
      }));
    // Tab to the Users link and follow it with Enter; focus lands on the page's heading.
    for (let i = 0; i < 40 && (await focused()).text !== "Users"; i++) await page.keyboard.press("Tab");
    assert.equal((await focused()).text, "Users");
    const outline = await page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle);
    assert.notEqual(outline, "none", "focus is visible");
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { level: 1, name: "Users" }).waitFor();
    await page.waitForFunction(() => document.activeElement?.tagName === "H1");
    assert.deepEqual(await focused(), { text: "Users", tag: "H1", inDialog: false });
    // On to "New user"; Enter opens the dialog with focus inside it.
    for (let i = 0; i < 40 && (await focused()).text !== "New user"; i++) await page.keyboard.press("Tab");
    await page.keyboard.press("Enter");
    await page.getByRole("dialog", { name: "New user" }).waitFor();
    assert.equal((await focused()).inDialog, true, "focus moved into the dialog");
    // Tab stays inside the modal dialog, Escape closes it and focus goes back to its button.
    for (let i = 0; i < 5; i++) await page.keyboard.press("Tab");
    assert.equal((await focused()).inDialog, true);
    await page.keyboard.press("Escape");
    await page.getByRole("dialog").waitFor({ state: "detached" });
    assert.deepEqual(await focused(), { text: "New user", tag: "BUTTON", inDialog: false });
  });

  it("offers exactly the choices the service accepts (an application's come from ApplicationChoicesService: consoleConsents.spec.ts)", () => {
    assert.deepEqual([...choices.PROVIDER_TYPES], Object.keys(PROVIDER_TYPES));
    assert.deepEqual([...choices.PROVIDER_TOKEN_AUTH_METHODS], [...PROVIDER_TOKEN_AUTH_METHODS]);
    assert.deepEqual([...choices.SIGNING_ALGS], [...SIGNING_ALGS]);
  });
});
