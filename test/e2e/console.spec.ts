import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import type { Page, Response } from "playwright-core";
import { ApplicationAdminService, SessionAdminService, UserAdminService } from "../../gen/identity/v1/admin_pb.js";
import * as choices from "../../console/src/choices.js";
import type { RunningServer } from "../../src/app/server.js";
import { GRANT_TYPES } from "../../src/accounts/applications.js";
import { PROVIDER_TYPES } from "../../src/federation/providerTypes/index.js";
import { ACCESS_TOKEN_STRATEGIES, PROVIDER_TOKEN_AUTH_METHODS, SIGNING_ALGS, TOKEN_FORMATS } from "../../src/shared/model.js";
import { authorizeUrl } from "../support/browserless.js";
import { startCallbackServer, type CallbackServer } from "../support/callbackServer.js";
import { useChromium } from "../support/chromium.js";
import { isActive, passwordTokens, refresh, TOKEN_PATH } from "../support/oauth.js";
import { consoleAuthorization } from "../support/consoleSignIn.js";
import { ADMIN_TOKEN, basicAuth, postForm, startTestServer, TEST_APP, TEST_PROVIDER, TEST_USER } from "../support/server.js";

const ROOT = { name: "root", password: "pw-root-123456", displayName: "Root", isAdmin: true };
/** A provider that is never called: enough for buttons and settings. */
const ACME_LIKE = { ...TEST_PROVIDER, name: "pinned", displayName: "Pinned" };
const SCREENSHOT = "docs/images/console-providers.png";
/** Screenshots for a person to look at (the phone-width pages); not part of the docs. */
const SHOTS = process.env.CONSOLE_SCREENSHOTS ?? "/tmp/console-screenshots";
// The DOM is not in this project's TypeScript lib; these run in the page.
declare const document: any;
declare function getComputedStyle(element: unknown): { outlineStyle: string; overflowX: string; borderBottomStyle: string };

const REVOKE_PATH = "/api/login/oauth/revoke";
const RPC_PATH = /\/identity\.v1\.[A-Za-z]+\/[A-Za-z]+$/;

/**
 * The admin console at /admin in Debian's headless Chromium, against the real
 * server: sign-in through the service itself, every page, and what an
 * administrator does there. Every page must keep to its CSP.
 */
describe("admin console in headless Chromium", function () {
  this.timeout(90_000);
  // A fresh profile each test, and the console must work under its own CSP: the fixture fails a test whose pages broke it.
  const chromium = useChromium();
  let server: RunningServer;
  let upstream: CallbackServer;
  let page: Page;
  /** Every RPC answer the page received, as text. */
  let rpcAnswers: Promise<string>[];
  let origin: string;

  before(async () => {
    // The bundle the server reads at start: built from the current source.
    execFileSync("npm", ["run", "--silent", "build:console"], { stdio: "ignore" });
    upstream = await startCallbackServer();
    origin = new URL(upstream.url).origin;
    const acme = {
      name: "acme", type: "Custom", displayName: "Acme", clientId: "acme", clientSecret: "acme-secret", scope: "openid",
      authUrl: `${origin}/authorize`, tokenUrl: `${origin}/token`, userInfoUrl: `${origin}/userinfo`, favicon: `${origin}/favicon.svg`,
    };
    server = await startTestServer({
      config: {
        applications: [{ ...TEST_APP, redirectUris: [upstream.url], providers: ["acme"], refreshExpireInHours: 24 }],
        users: [TEST_USER, ROOT],
        providers: [acme],
      },
    });
  });
  after(async () => {
    await server?.close();
    await upstream?.close();
  });

  beforeEach(async () => {
    page = chromium.page;
    rpcAnswers = [];
    page.on("response", (response: Response) => {
      if (RPC_PATH.test(new URL(response.url()).pathname)) rpcAnswers.push(response.text().catch(() => ""));
    });
  });

  async function signInToConsole(user: { name: string; password: string }): Promise<void> {
    await page.goto(`${server.url}/admin`);
    // Straight to the service's login page: the shell drew nothing on the way.
    await page.waitForURL((url) => url.pathname === "/login/oauth/authorize");
    const authorize = new URL(page.url());
    assert.equal(authorize.searchParams.get("client_id"), server.domain.console.clientId);
    assert.equal(authorize.searchParams.get("redirect_uri"), `${server.issuer}/admin/`);
    assert.equal(authorize.searchParams.get("code_challenge_method"), "S256");
    assert.equal(authorize.searchParams.get("scope"), "openid profile identity:admin");
    assert.ok(authorize.searchParams.get("state"));
    await page.getByLabel("Username").fill(user.name);
    await page.getByLabel("Password").fill(user.password);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.waitForURL((url) => url.pathname === "/admin/" && !url.searchParams.has("code"));
    // The code leaves the address before it is exchanged: wait for what the console draws after (a page, or a refusal).
    await page.locator("#app h1").waitFor();
  }

  /** How many fields hold this text as their value (a value set by script is not in page.content()). */
  const inputsHolding = (text: string) =>
    page.evaluate((t) => [...document.querySelectorAll("input, textarea")].filter((field: any) => field.value.includes(t)).length as number, text);

  const heading = () => page.getByRole("heading", { level: 1 });
  const nav = () => page.getByRole("navigation", { name: "Console" });

  async function openPage(title: string): Promise<void> {
    await nav().getByRole("link", { name: title, exact: true }).click();
    await page.getByRole("heading", { level: 1, name: title, exact: true }).waitFor();
  }

  /** Signed in as root, the "New application" dialog with its name and redirect URIs filled in. */
  async function newApplicationDialog(name: string, redirectUris: string) {
    await signInToConsole(ROOT);
    await openPage("Applications");
    await page.getByRole("button", { name: "New application" }).click();
    const dialog = page.getByRole("dialog", { name: "New application" });
    await dialog.getByLabel("Name", { exact: true }).fill(name);
    await dialog.getByLabel("Redirect URIs", { exact: true }).fill(redirectUris);
    return dialog;
  }

  /** The client secret the console shows once for `appName`, read, then its dialog closed with Done. */
  async function dismissShownSecret(appName: string): Promise<string> {
    const shown = page.getByRole("dialog", { name: `Client secret of ${appName}` });
    const secret = await shown.getByLabel("Client Secret", { exact: true }).inputValue();
    await shown.getByRole("button", { name: "Done" }).click();
    await shown.waitFor({ state: "detached" });
    return secret;
  }

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
    assert.deepEqual(entries, ["Providers", "Applications", "Users", "Signing keys", "Sessions", "Events", "Settings"]);
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
    for (const rpc of rpcs) assert.match(rpc, /^POST \/identity\.v1\.(Federation|ApplicationAdmin|UserAdmin|KeyAdmin|SessionAdmin|EventAdmin|SettingsAdmin)Service\/\w+$/);
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

  it("offers exactly the choices the service accepts", () => {
    assert.deepEqual([...choices.PROVIDER_TYPES], Object.keys(PROVIDER_TYPES));
    assert.deepEqual([...choices.PROVIDER_TOKEN_AUTH_METHODS], [...PROVIDER_TOKEN_AUTH_METHODS]);
    assert.deepEqual([...choices.GRANT_TYPES], [...GRANT_TYPES]);
    assert.deepEqual([...choices.TOKEN_FORMATS], [...TOKEN_FORMATS]);
    assert.deepEqual([...choices.SIGNING_ALGS], [...SIGNING_ALGS]);
    assert.deepEqual([...choices.ACCESS_TOKEN_STRATEGIES], [...ACCESS_TOKEN_STRATEGIES]);
  });
});
