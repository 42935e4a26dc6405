import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import type { Page } from "playwright-core";
import { SessionAdminService } from "../../gen/identity/v1/admin_pb.js";
import type { RunningServer } from "../../src/app/server.js";
import { PROVIDER_TYPES } from "../../src/federation/providerTypes/index.js";
import { authorizeUrl } from "../support/browserless.js";
import type { CallbackServer } from "../support/callbackServer.js";
import { isActive, TOKEN_PATH } from "../support/oauth.js";
import { consoleAuthorization } from "../support/consoleSignIn.js";
import { ADMIN_TOKEN, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";
import { ACME_LIKE, REVOKE_PATH, ROOT, SCREENSHOT, SHOTS, useConsoleSuite } from "../support/consoleSuite.js";

// The DOM is not in this project's TypeScript lib; these run in the page.
declare const document: any;
declare function getComputedStyle(element: unknown): { outlineStyle: string; overflowX: string; borderBottomStyle: string };

/**
 * The admin console at /admin in Debian's headless Chromium, against the real
 * server: sign-in through the service itself, every page, and what an
 * administrator does there. Every page must keep to its CSP.
 */
describe("admin console in headless Chromium: sign-in, providers, settings", function () {
  this.timeout(90_000);
  const suite = useConsoleSuite();
  const { chromium, signInToConsole, inputsHolding, heading, nav, openPage, newApplicationDialog } = suite;
  let server: RunningServer;
  let upstream: CallbackServer;
  let page: Page;
  let rpcAnswers: Promise<string>[];
  let origin: string;
  beforeEach(() => {
    ({ server, upstream, page, rpcAnswers, origin } = suite);
  });

  it("serves a shell with the console's frame and a loading message under a strict CSP, and /admin leads to it", async () => {
    const res = await fetch(`${server.url}/admin/`);
    const shell = { status: res.status, headers: res.headers, text: await res.text() };
    assert.equal(shell.status, 200);
    // Never a blank page: the frame and a loading message are in the HTML itself, before any script runs.
    assert.match(shell.text, /<div id="app"><header class="top"><span class="brand">Identity console<\/span><\/header>/);
    assert.match(shell.text, /<p role="status">Loading the console…<\/p>/);
    assert.match(shell.text, /<noscript><p class="error">The console needs JavaScript/, "and says why it goes no further without scripts");
    assert.doesNotMatch(shell.text, /<script>|<style|style=/);
    const csp = shell.headers.get("content-security-policy")!;
    for (const rule of ["default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"]) {
      assert.ok(csp.includes(rule), `${rule} in ${csp}`);
    }
    const bare = await fetch(`${server.url}/admin`, { redirect: "manual" });
    assert.equal(bare.headers.get("location"), "/admin/");
    const script = /src="(\/admin\/console\.js\?v=[\w-]+)"/.exec(shell.text)?.[1];
    assert.ok(script, "the shell loads the bundle by its content hash");
    const bundle = await fetch(server.url + script);
    assert.equal(bundle.status, 200);
    assert.match(bundle.headers.get("content-type")!, /javascript/);
    // The shell is never cached; an asset named by its hash never changes; by another name it is checked each time.
    assert.equal(shell.headers.get("cache-control"), "no-store");
    assert.match(bundle.headers.get("cache-control")!, /immutable/);
    assert.match(bundle.headers.get("cache-control")!, /max-age=31536000/);
    const style = /href="(\/admin\/console\.css\?v=[\w-]+)"/.exec(shell.text)?.[1];
    assert.ok(style, "the shell loads the stylesheet by its content hash");
    assert.match((await fetch(server.url + style)).headers.get("cache-control")!, /immutable/);
    for (const unhashed of ["/admin/console.js", "/admin/console.js?v=stale", "/admin/console.css"]) {
      const res = await fetch(server.url + unhashed);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("cache-control"), "no-cache", unhashed);
    }
  });

  it("shows its frame and a loading message with no script run at all, styled and within its CSP", async () => {
    // A profile with no script at all; the fixture holds its pages to their CSP.
    const { page: bare } = await chromium.newProfile({ javaScriptEnabled: false });
    await bare.goto(`${server.url}/admin/`);
    assert.equal(new URL(bare.url()).pathname, "/admin/", "no script, so no redirect: the shell itself");
    assert.equal((await bare.locator("header .brand").textContent())?.trim(), "Identity console");
    assert.equal((await bare.getByRole("status").textContent())?.trim(), "Loading the console…");
    // The stylesheet (a link, not inline) draws the frame.
    assert.equal(await bare.evaluate(() => getComputedStyle(document.querySelector("header.top")).borderBottomStyle), "solid");
    mkdirSync(SHOTS, { recursive: true });
    await bare.setViewportSize({ width: 375, height: 300 });
    await bare.screenshot({ path: `${SHOTS}/shell.png` });
  });

  it("signs an admin in through the service's own login page, and every page is in the navigation", async () => {
    // What the page itself calls: only the token endpoint, then the generated clients' RPC paths.
    const calls: string[] = [];
    page.on("request", (request) => {
      if (["fetch", "xhr"].includes(request.resourceType())) calls.push(`${request.method()} ${new URL(request.url()).pathname}`);
    });
    await signInToConsole(ROOT);
    assert.equal(await heading().textContent(), "Providers");
    const entries = await nav().getByRole("link").allTextContents();
    assert.deepEqual(entries, ["Providers", "Applications", "Resources", "Users", "Signing keys", "Sessions", "Events", "Settings"]);
    for (const title of entries) {
      await openPage(title);
      assert.equal(await heading().textContent(), title);
      assert.equal(await nav().getByRole("link", { name: title, exact: true }).getAttribute("aria-current"), "page");
    }
    // Reloading keeps the session: no second trip to the login page.
    await page.reload();
    await page.getByRole("heading", { level: 1, name: "Settings" }).waitFor();
    assert.equal(new URL(page.url()).pathname, "/admin/");
    assert.equal(calls[0], `POST ${TOKEN_PATH}`);
    assert.equal(calls.filter((c) => c === `POST ${TOKEN_PATH}`).length, 1, "one code exchange");
    const rpcs = calls.slice(1);
    assert.ok(rpcs.length >= 6, calls.join(", "));
    for (const rpc of rpcs) assert.match(rpc, /^POST \/identity\.v1\.(Federation|ApplicationAdmin|ApplicationChoices|ResourceAdmin|UserAdmin|KeyAdmin|SessionAdmin|EventAdmin|SettingsAdmin)Service\/\w+$/);
  });

  /** The access token the console holds now, from its session in sessionStorage. */
  const heldAccessToken = async () => {
    const stored = await page.evaluate(() => (globalThis as any).sessionStorage.getItem("identity-console.session") as string | null);
    assert.ok(stored, "a signed-in console holds a session");
    return (JSON.parse(stored) as { accessToken: string }).accessToken;
  };

  it("signs out with one click: the token is revoked and forgotten and the service's session ended, so /admin asks for the password again", async () => {
    await signInToConsole(ROOT);
    const accessToken = await heldAccessToken();
    assert.equal(await isActive(server, accessToken), true);
    const visited: string[] = [];
    page.on("framenavigated", (frame) => frame === page.mainFrame() && visited.push(new URL(frame.url()).pathname));
    const posts: string[] = [];
    page.on("request", (request) => request.method() === "POST" && posts.push(new URL(request.url()).pathname));
    const revocation = page.waitForResponse((res) => new URL(res.url()).pathname === REVOKE_PATH);
    await page.getByRole("button", { name: "Sign out" }).click();
    // RFC 7009 as a public client: its client_id, no secret, and the service says 200.
    const revoked = await revocation;
    assert.equal(revoked.status(), 200);
    const sent = new URLSearchParams(revoked.request().postData() ?? "");
    assert.deepEqual([sent.get("client_id"), sent.get("client_secret"), sent.get("token") === accessToken], [server.domain.console.clientId, null, true]);
    // The console names itself to the sign-out endpoint (its ID token), so no second "Sign out?" page; it comes back to /admin/.
    await page.waitForURL((url) => url.pathname === "/login/oauth/authorize");
    await page.getByLabel("Password").waitFor();
    assert.deepEqual(visited, ["/admin/", "/login/oauth/authorize"], "straight through the sign-out endpoint, no page there");
    assert.deepEqual(posts.filter((p) => p === REVOKE_PATH || p === "/api/logout"), [REVOKE_PATH, "/api/logout"], "revoked first, then signed out");
    assert.equal(await page.evaluate(() => (globalThis as any).sessionStorage.getItem("identity-console.session")), null, "the token is gone");
    assert.equal(await isActive(server, accessToken), false, "a copy of the token is dead too");
    await page.goto(`${server.url}/admin/`);
    await page.waitForURL((url) => url.pathname === "/login/oauth/authorize");
    await page.getByLabel("Password").waitFor();
  });

  it("signs out even when the revocation fails", async () => {
    await signInToConsole(ROOT);
    const accessToken = await heldAccessToken();
    await page.route((url) => url.pathname === REVOKE_PATH, (route) => route.abort("connectionrefused"));
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL((url) => url.pathname === "/login/oauth/authorize");
    await page.getByLabel("Password").waitFor();
    assert.equal(await page.evaluate(() => (globalThis as any).sessionStorage.getItem("identity-console.session")), null, "the token is gone");
    // The revocation never arrived: the token lives out its hour, as before revocation at sign-out.
    assert.equal(await isActive(server, accessToken), true);
  });

  it("refuses a user who is not an administrator with a page that says so", async () => {
    await signInToConsole(TEST_USER);
    await page.getByRole("heading", { level: 1, name: "Not an administrator" }).waitFor();
    assert.match((await page.locator("main").textContent())!, new RegExp(`signed in as ${TEST_USER.name}`));
    assert.equal(await nav().count(), 0, "no console for a non-admin");
  });

  it("creates a Custom provider and attaches it to an application, whose login page then shows it beside the others", async () => {
    await page.setViewportSize({ width: 1100, height: 480 });
    await signInToConsole(ROOT);
    await page.getByRole("button", { name: "New provider" }).click();
    const dialog = page.getByRole("dialog", { name: "New provider" });
    await dialog.getByLabel("Name", { exact: true }).fill("widget");
    await dialog.getByLabel("Display name", { exact: true }).fill("Widget Co");
    assert.deepEqual(await dialog.getByLabel("Type", { exact: true }).locator("option").allTextContents(), Object.keys(PROVIDER_TYPES));
    await dialog.getByLabel("Type", { exact: true }).selectOption("Custom");
    await dialog.getByLabel("Client ID", { exact: true }).fill("widget-client");
    await dialog.getByLabel("Client Secret", { exact: true }).fill("widget-secret-never-shown");
    await dialog.getByLabel("Auth URL", { exact: true }).fill(`${origin}/widget/authorize`);
    await dialog.getByLabel("Scope", { exact: true }).fill("openid email");
    await dialog.getByLabel("Token URL", { exact: true }).fill(`${origin}/widget/token`);
    await dialog.getByLabel("UserInfo URL", { exact: true }).fill(`${origin}/widget/userinfo`);
    await dialog.getByLabel("Favicon", { exact: true }).fill(`${origin}/favicon.svg`);
    // The live preview shows the favicon as the login page will.
    const preview = dialog.locator(".preview img");
    await preview.waitFor();
    assert.equal(await preview.getAttribute("src"), `${origin}/favicon.svg`);
    await page.waitForFunction(() => document.querySelector(".preview img")?.naturalWidth > 0);
    await dialog.getByRole("button", { name: "Create" }).click();
    await dialog.waitFor({ state: "detached" });
    const row = page.getByRole("row").filter({ hasText: "widget-client" });
    assert.match((await row.textContent())!, /Widget Co.*widget.*Custom.*Set/);
    // The README's picture of the Providers page, drawn here.
    await page.waitForFunction(() => [...document.querySelectorAll("img.favicon")].every((i: any) => i.complete && i.naturalWidth > 0));
    mkdirSync("docs/images", { recursive: true });
    await page.screenshot({ path: SCREENSHOT });

    await openPage("Applications");
    await page.getByRole("button", { name: `Edit ${TEST_APP.name}` }).click();
    const edit = page.getByRole("dialog", { name: `Edit application ${TEST_APP.name}` });
    const providers = edit.getByRole("group", { name: "Providers on its login page" });
    assert.equal(await providers.getByLabel("Acme").isChecked(), true);
    await providers.getByLabel("Widget Co").check();
    await edit.getByRole("button", { name: "Save" }).click();
    await edit.waitFor({ state: "detached" });
    await page.getByRole("row").filter({ hasText: TEST_APP.clientId }).filter({ hasText: "Acme, Widget Co" }).waitFor();

    // Someone else's browser (this one has a session): the application's login page.
    const visitor = await chromium.newProfile();
    try {
      const login = visitor.page;
      await login.goto(authorizeUrl(server.url, { redirect_uri: upstream.url }));
      const buttons = login.locator("button.provider");
      assert.deepEqual((await buttons.allTextContents()).map((t) => t.trim()), ["Sign in with Acme", "Sign in with Widget Co"]);
      const icon = login.getByRole("button", { name: "Sign in with Widget Co" }).locator("img");
      assert.equal(await icon.getAttribute("src"), `${origin}/favicon.svg`);
      await login.waitForFunction(() => [...document.querySelectorAll("button.provider img")].every((i: any) => i.naturalWidth > 0));
      assert.deepEqual(visitor.cspViolations, []);
    } finally {
      await visitor.context.close();
    }
  });

  it("creates a provider of every type the service offers, the preset ones from a client ID and secret alone", async () => {
    await signInToConsole(ROOT);
    const presets: Record<string, Record<string, string>> = {
      GitHub: {},
      Google: {},
      OIDC: { Issuer: `${origin}/oidc` },
    };
    for (const [type, extra] of Object.entries(presets)) {
      const name = `preset-${type.toLowerCase()}`;
      await page.getByRole("button", { name: "New provider" }).click();
      const dialog = page.getByRole("dialog", { name: "New provider" });
      await dialog.getByLabel("Name", { exact: true }).fill(name);
      await dialog.getByLabel("Type", { exact: true }).selectOption(type);
      await dialog.getByLabel("Client ID", { exact: true }).fill(`${name}-client`);
      await dialog.getByLabel("Client Secret", { exact: true }).fill(`${name}-secret`);
      for (const [label, value] of Object.entries(extra)) await dialog.getByLabel(label, { exact: true }).fill(value);
      await dialog.getByRole("button", { name: "Create" }).click();
      await dialog.waitFor({ state: "detached" });
      assert.match((await page.getByRole("row").filter({ hasText: `${name}-client` }).textContent())!, new RegExp(`${name}${type}`));
      assert.equal((await server.domain.providerAdmin.get(name)).type, type);
    }
  });

  it("shows the redirect URI to register for each provider: its own callback, or the shared one when Shared callback is checked", async () => {
    await signInToConsole(ROOT);
    /** The Redirect URI cell of a provider's row (the second monospace one, after the client ID). */
    const redirectUriIn = (clientId: string) => page.getByRole("row").filter({ hasText: clientId }).locator("td.mono").nth(1).textContent();
    assert.equal(await redirectUriIn("acme"), `${server.issuer}/callback/acme`);
    await page.getByRole("button", { name: "New provider" }).click();
    const dialog = page.getByRole("dialog", { name: "New provider" });
    await dialog.getByLabel("Name", { exact: true }).fill("relayed");
    await dialog.getByLabel("Type", { exact: true }).selectOption("GitHub");
    await dialog.getByLabel("Client ID", { exact: true }).fill("relayed-client");
    await dialog.getByLabel("Client Secret", { exact: true }).fill("relayed-secret");
    const note = dialog.locator("#provider-redirectUri code");
    assert.equal(await note.textContent(), `${server.issuer}/callback/relayed`);
    await dialog.getByLabel("Shared callback", { exact: true }).check();
    assert.equal(await note.textContent(), `${server.issuer}/callback`);
    await dialog.getByRole("button", { name: "Create" }).click();
    await dialog.waitFor({ state: "detached" });
    assert.equal(await redirectUriIn("relayed-client"), `${server.issuer}/callback`);
    assert.equal((await server.domain.providerAdmin.get("relayed")).sharedCallback, true);
  });

  it("never shows a provider's client secret once saved: not in the page, not in any RPC answer", async () => {
    const secret = "a-secret-the-console-must-never-show-9f8e7d";
    await signInToConsole(ROOT);
    await page.getByRole("button", { name: "New provider" }).click();
    let dialog = page.getByRole("dialog", { name: "New provider" });
    await dialog.getByLabel("Name", { exact: true }).fill("hidden");
    await dialog.getByLabel("Client ID", { exact: true }).fill("hidden-client");
    await dialog.getByLabel("Client Secret", { exact: true }).fill(secret);
    await dialog.getByLabel("Auth URL", { exact: true }).fill(`${origin}/a`);
    await dialog.getByLabel("Scope", { exact: true }).fill("openid");
    await dialog.getByLabel("Token URL", { exact: true }).fill(`${origin}/t`);
    await dialog.getByLabel("UserInfo URL", { exact: true }).fill(`${origin}/u`);
    await dialog.getByLabel("Favicon", { exact: true }).fill(`${origin}/favicon.svg`);
    await dialog.getByRole("button", { name: "Create" }).click();
    await dialog.waitFor({ state: "detached" });

    await page.getByRole("button", { name: "Edit hidden" }).click();
    dialog = page.getByRole("dialog", { name: "Edit provider hidden" });
    const field = dialog.getByLabel("Client Secret", { exact: true });
    assert.equal(await field.inputValue(), "", "the field stays empty");
    assert.match((await dialog.locator("#provider-clientSecret-note").textContent())!, /A secret is set/);
    // Saving another field leaves the secret as it was, still unseen.
    await dialog.getByLabel("Display name", { exact: true }).fill("Hidden");
    await dialog.getByRole("button", { name: "Save" }).click();
    await dialog.waitFor({ state: "detached" });
    await page.getByRole("button", { name: "Edit hidden" }).click();
    assert.equal(await page.getByLabel("Client Secret", { exact: true }).inputValue(), "");

    assert.ok(!(await page.content()).includes(secret), "not in the DOM");
    assert.equal(await inputsHolding(secret), 0, "not in any field's value");
    const answers = await Promise.all(rpcAnswers);
    assert.ok(answers.length >= 4, `the page's RPC answers were seen (${answers.length})`);
    for (const answer of answers) assert.ok(!answer.includes(secret), "not in an RPC answer");
    assert.equal(await server.domain.providerAdmin.clientSecret(await server.domain.providerAdmin.get("hidden")), secret, "but stored");
  });

  it("previews only an http(s) or data: image as a favicon, and says which names the service accepts", async () => {
    await signInToConsole(ROOT);
    await page.getByRole("button", { name: "New provider" }).click();
    const dialog = page.getByRole("dialog", { name: "New provider" });
    const favicon = dialog.getByLabel("Favicon", { exact: true });
    const preview = dialog.locator(".preview");
    await favicon.fill(`${origin}/favicon.svg`);
    await preview.locator("img").waitFor();
    for (const unsafe of ["javascript:alert(1)", " JavaScript:alert(1)", "data:text/html,<script>alert(1)</script>", "vbscript:x", "//evil.example/x.png"]) {
      await favicon.fill(unsafe);
      await preview.locator(".favicon.none").waitFor();
      assert.equal(await preview.locator("img").count(), 0, `no image for ${unsafe}`);
    }
    await favicon.fill("data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg'/%3E");
    await preview.locator("img").waitFor();
    // The name's note says what the service itself accepts (docs/admin.md: letters, digits, _ . -).
    const note = (await dialog.locator("#provider-name-note").textContent())!;
    assert.doesNotMatch(note, /@/, note);
    await dialog.getByLabel("Name", { exact: true }).fill("has@sign");
    await dialog.getByRole("button", { name: "Create" }).click();
    assert.match((await dialog.locator("#provider-name-error").textContent())!, /letters, digits or _ \. -/);
  });

  it("shows a bad Auth URL's error next to the Auth URL field", async () => {
    await signInToConsole(ROOT);
    await page.getByRole("button", { name: "New provider" }).click();
    const dialog = page.getByRole("dialog", { name: "New provider" });
    await dialog.getByLabel("Name", { exact: true }).fill("badurl");
    await dialog.getByLabel("Client ID", { exact: true }).fill("c");
    await dialog.getByLabel("Client Secret", { exact: true }).fill("s");
    await dialog.getByLabel("Auth URL", { exact: true }).fill("http://login.example.com/authorize");
    await dialog.getByLabel("Scope", { exact: true }).fill("openid");
    await dialog.getByLabel("Token URL", { exact: true }).fill("https://login.example.com/token");
    await dialog.getByLabel("UserInfo URL", { exact: true }).fill("https://login.example.com/userinfo");
    await dialog.getByLabel("Favicon", { exact: true }).fill("https://login.example.com/favicon.ico");
    await dialog.getByRole("button", { name: "Create" }).click();
    await dialog.locator(".field-error, .error").first().waitFor();
    const error = dialog.locator("#provider-authUrl-error");
    assert.equal(await error.count(), 1, `the error is the Auth URL's: ${await dialog.locator(".field-error, .error").allTextContents()}`);
    assert.match((await error.textContent())!, /must use https/);
    const authUrl = dialog.getByLabel("Auth URL", { exact: true });
    assert.equal(await authUrl.getAttribute("aria-invalid"), "true");
    assert.match((await authUrl.getAttribute("aria-describedby"))!, /provider-authUrl-error/);
    // Next to its field: inside the same field block as the Auth URL input.
    assert.equal(await dialog.locator(".field").filter({ has: page.locator("#provider-authUrl") }).locator(".field-error").textContent(), await error.textContent());
    assert.equal(await dialog.locator(".field-error").count(), 1, "only that field is marked");
    await dialog.getByLabel("Auth URL", { exact: true }).fill("https://login.example.com/authorize");
    await dialog.getByRole("button", { name: "Create" }).click();
    await dialog.waitFor({ state: "detached" });
    await page.getByRole("row").filter({ hasText: "badurl" }).waitFor();

    // Emptying a field that must be set is refused under it, not silently kept.
    await page.getByRole("button", { name: "Edit badurl" }).click();
    const edit = page.getByRole("dialog", { name: "Edit provider badurl" });
    await edit.getByLabel("Scope", { exact: true }).fill("");
    await edit.getByRole("button", { name: "Save" }).click();
    await edit.locator("#provider-scope-error").waitFor();
    assert.match((await edit.locator("#provider-scope-error").textContent())!, /required/);
  });

  it("shows an error under every bad field of an application, not only the first", async () => {
    const dialog = await newApplicationDialog("badredirect", "https://ok.example.com/cb\nnot a url");
    await dialog.getByLabel("Allowed origins", { exact: true }).fill("https://ok.example.com/with/path");
    // Not a whole number of hours: the service names it with the rest.
    await dialog.getByLabel("Token lifetime (hours)", { exact: true }).fill("1.5");
    await dialog.getByRole("button", { name: "Create" }).click();
    await dialog.locator("#app-redirectUris-error").waitFor();
    const marked = await dialog.locator(".field-error").evaluateAll((errors: any[]) => errors.map((e) => e.id as string));
    assert.deepEqual(marked, ["app-redirectUris-error", "app-allowedOrigins-error", "app-expireInHours-error"]);
    assert.match((await dialog.locator("#app-redirectUris-error").textContent())!, /not a url/);
    assert.match((await dialog.locator("#app-allowedOrigins-error").textContent())!, /not an origin/);
    assert.match((await dialog.locator("#app-expireInHours-error").textContent())!, /whole number of hours/);
    for (const label of ["Redirect URIs", "Allowed origins", "Token lifetime (hours)"]) {
      const field = dialog.getByLabel(label, { exact: true });
      assert.equal(await field.getAttribute("aria-invalid"), "true", label);
    }
    assert.equal(await dialog.getByRole("alert").count(), 0, "nothing left over above the form");
    assert.equal(await server.store.applications.findByName("badredirect"), undefined);
    // Put right one at a time: the errors that remain stay under their fields.
    await dialog.getByLabel("Redirect URIs", { exact: true }).fill("https://ok.example.com/cb");
    await dialog.getByRole("button", { name: "Create" }).click();
    await dialog.locator("#app-redirectUris-error").waitFor({ state: "detached" });
    assert.deepEqual(await dialog.locator(".field-error").evaluateAll((errors: any[]) => errors.map((e) => e.id as string)), ["app-allowedOrigins-error", "app-expireInHours-error"]);
    assert.equal(await dialog.getByRole("button", { name: "Create" }).isEnabled(), true, "the form can be sent again");
  });

  it("shows an error under every bad field of a provider: malformed, clear-text and missing ones together", async () => {
    await signInToConsole(ROOT);
    await page.getByRole("button", { name: "New provider" }).click();
    const dialog = page.getByRole("dialog", { name: "New provider" });
    await dialog.getByLabel("Name", { exact: true }).fill("several");
    await dialog.getByLabel("Client ID", { exact: true }).fill("c");
    await dialog.getByLabel("Client Secret", { exact: true }).fill("s");
    await dialog.getByLabel("Auth URL", { exact: true }).fill("http://login.example.com/authorize");
    await dialog.getByLabel("Token URL", { exact: true }).fill("not a url");
    await dialog.getByLabel("Email path", { exact: true }).fill("a..b");
    await dialog.getByRole("button", { name: "Create" }).click();
    await dialog.locator("#provider-authUrl-error").waitFor();
    const errors = Object.fromEntries(
      await dialog.locator(".field-error").evaluateAll((found: any[]) => found.map((e) => [e.id as string, e.textContent as string])),
    );
    assert.deepEqual(Object.keys(errors).sort(), [
      "provider-authUrl-error", "provider-favicon-error", "provider-mapping-email-error", "provider-scope-error", "provider-tokenUrl-error", "provider-userInfoUrl-error",
    ].sort(), JSON.stringify(errors));
    assert.match(errors["provider-authUrl-error"]!, /https/);
    assert.match(errors["provider-tokenUrl-error"]!, /not an absolute URL/);
    assert.match(errors["provider-scope-error"]!, /required/);
  });

  it("changes the console's sign-in providers on the Settings page; the next sign-in offers them, and a name that is no provider is refused under the list", async () => {
    await signInToConsole(ROOT);
    await openPage("Settings");
    const list = page.getByRole("group", { name: "Providers on the console's sign-in page" });
    await list.getByLabel("Acme", { exact: true }).check();
    await page.getByRole("button", { name: "Save" }).click();
    await page.getByRole("status").filter({ hasText: "Saved. The next sign-in offers Acme." }).waitFor();
    assert.equal(await page.locator("#console-providers-overridden").count(), 0, "not overridden here");
    // The next sign-in, in another browser: the console's login page offers it.
    const visitor = await chromium.newProfile();
    await visitor.page.goto(consoleAuthorization(server).url);
    assert.deepEqual((await visitor.page.locator("button.provider").allTextContents()).map((t) => t.trim()), ["Sign in with Acme"]);

    // A stored name whose provider is gone since: shown so it can be taken off; kept, it is refused under the list.
    await server.domain.providerAdmin.create({ ...ACME_LIKE, type: "Custom", name: "short-lived" });
    await server.domain.consoleProviders.set(["acme", "short-lived"]);
    await server.domain.providerAdmin.delete("short-lived");
    await page.reload();
    const gone = list.getByLabel("short-lived (no such provider)", { exact: true });
    assert.equal(await gone.isChecked(), true);
    await page.getByRole("button", { name: "Save" }).click();
    const error = page.locator("#settings-consoleProviders-error");
    await error.waitFor();
    assert.match((await error.textContent())!, /"short-lived" is not a login provider/);
    assert.deepEqual(await server.domain.consoleProviders.stored(), ["acme", "short-lived"], "nothing stored");
    await gone.uncheck();
    await list.getByLabel("Acme", { exact: true }).uncheck();
    await page.getByRole("button", { name: "Save" }).click();
    await page.getByRole("status").filter({ hasText: "the password alone" }).waitFor();
    assert.equal(await error.count(), 0);
    assert.deepEqual(await server.domain.consoleProviders.stored(), []);
  });

  it("says on the Settings page when --console-providers overrides the stored list on this instance", async () => {
    const pinned = await startTestServer({ config: { users: [ROOT], providers: [ACME_LIKE] }, overrides: { consoleProviders: [ACME_LIKE.name] } });
    try {
      await page.goto(`${pinned.url}/admin/#/settings`);
      await page.getByLabel("Username").fill(ROOT.name);
      await page.getByLabel("Password").fill(ROOT.password);
      await page.getByRole("button", { name: "Sign in", exact: true }).click();
      await page.getByRole("heading", { level: 1, name: "Settings" }).waitFor();
      const note = page.locator("#console-providers-overridden");
      await note.waitFor();
      assert.match((await note.textContent())!, /Overridden on this instance by --console-providers: its sign-in page offers Pinned\./);
      await page.getByRole("group", { name: "Providers on the console's sign-in page" }).getByLabel("Pinned", { exact: true }).check();
      await page.getByRole("button", { name: "Save" }).click();
      await page.getByRole("status").filter({ hasText: "on instances without the override" }).waitFor();
      assert.deepEqual(await pinned.domain.consoleProviders.stored(), [ACME_LIKE.name], "stored all the same");
    } finally {
      await pinned.close();
    }
  });

  it("signs in again when its token stops working (the admin's sessions were ended)", async () => {
    await signInToConsole(ROOT);
    await openPage("Sessions");
    await page.getByLabel("User", { exact: true }).fill(ROOT.name);
    await page.getByRole("button", { name: "Show sessions" }).click();
    await page.getByRole("button", { name: `Revoke all of ${ROOT.name}` }).click();
    await page.getByRole("dialog", { name: "Revoke" }).getByRole("button", { name: "Revoke" }).click();
    // The console's own token ended with them: the next call is refused, and the console goes back to the login page.
    await page.waitForURL((url) => url.pathname === "/login/oauth/authorize");
    await page.getByLabel("Username").fill(ROOT.name);
    await page.getByLabel("Password").fill(ROOT.password);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.getByRole("heading", { level: 1, name: "Sessions" }).waitFor();
  });

  it("starts one sign-in, not one per call, when several calls find the token dead at once", async () => {
    await signInToConsole(ROOT);
    // The first page's own list loads first: refused after the revocation, it would start a sign-in of its own mid-click.
    await page.getByText("Loading…").waitFor({ state: "detached" });
    const sessions = createClient(SessionAdminService, createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" }));
    await sessions.revokeAllUserSessions({ user: ROOT.name }, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    const authorizations: string[] = [];
    page.on("request", (request) => {
      const url = new URL(request.url());
      if (url.pathname === "/login/oauth/authorize") authorizations.push(url.searchParams.get("state")!);
    });
    // The Applications page loads applications and providers together: both are refused.
    await nav().getByRole("link", { name: "Applications", exact: true }).click();
    await page.waitForURL((url) => url.pathname === "/login/oauth/authorize");
    await page.getByLabel("Username").fill(ROOT.name);
    await page.getByLabel("Password").fill(ROOT.password);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.getByRole("heading", { level: 1, name: "Applications" }).waitFor();
    assert.equal(new Set(authorizations).size, 1, `one sign-in, one state: ${authorizations.join(", ")}`);
  });
});
