import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import type { Locator, Page, Response } from "playwright-core";
import type { RunningServer } from "../../src/app/server.js";
import { startCallbackServer, type CallbackServer } from "./callbackServer.js";
import { useChromium, type ChromiumSession } from "./chromium.js";
import { startTestServer, TEST_APP, TEST_PROVIDER, TEST_USER, type TestServerOptions } from "./server.js";

export const ROOT = { name: "root", password: "pw-root-123456", displayName: "Root", isAdmin: true };
/** A provider that is never called: enough for buttons and settings. */
export const ACME_LIKE = { ...TEST_PROVIDER, name: "pinned", displayName: "Pinned" };
export const SCREENSHOT = "docs/images/console-providers.png";
/** Screenshots for a person to look at (the phone-width pages); not part of the docs. */
export const SHOTS = process.env.CONSOLE_SCREENSHOTS ?? "/tmp/console-screenshots";
export const REVOKE_PATH = "/api/login/oauth/revoke";
const RPC_PATH = /\/identity\.v1\.[A-Za-z]+\/[A-Za-z]+$/;
// The DOM is not in this project's TypeScript lib; these run in the page.
declare const document: any;

/** What the console specs share: one server and provider fake per file, a fresh Chromium profile per test, and the steps every test takes. */
export interface ConsoleSuite {
  chromium: ChromiumSession;
  server: RunningServer;
  upstream: CallbackServer;
  origin: string;
  /** The current test's page. */
  page: Page;
  /** Every RPC answer the page received, as text. */
  rpcAnswers: Promise<string>[];
  signInToConsole(user: { name: string; password: string }): Promise<void>;
  /** How many fields hold this text as their value (a value set by script is not in page.content()). */
  inputsHolding(text: string): Promise<number>;
  heading(): Locator;
  nav(): Locator;
  openPage(title: string): Promise<void>;
  /** Signed in as root, the "New application" dialog with its name and redirect URIs filled in. */
  newApplicationDialog(name: string, redirectUris: string): Promise<Locator>;
  /** The client secret the console shows once for `appName`, read, then its dialog closed with Done. */
  dismissShownSecret(appName: string): Promise<string>;
}

/**
 * The admin console at /admin in Debian's headless Chromium, against the
 * real server. Call at the top of a describe block; read the suite's fields
 * inside tests (they change per test and per file).
 */
export function useConsoleSuite(options: Pick<TestServerOptions, "overrides"> = {}): ConsoleSuite {
  // A fresh profile each test, and the console must work under its own CSP: the fixture fails a test whose pages broke it.
  const s = { chromium: useChromium() } as ConsoleSuite;
  before(async () => {
    // The bundle the server reads at start: built from the current source.
    execFileSync("npm", ["run", "--silent", "build:console"], { stdio: "ignore" });
    s.upstream = await startCallbackServer();
    s.origin = new URL(s.upstream.url).origin;
    const origin = s.origin;
    const acme = {
      name: "acme", type: "Custom", displayName: "Acme", clientId: "acme", clientSecret: "acme-secret", scope: "openid",
      authUrl: `${origin}/authorize`, tokenUrl: `${origin}/token`, userInfoUrl: `${origin}/userinfo`, favicon: `${origin}/favicon.svg`,
    };
    s.server = await startTestServer({
      config: {
        applications: [{ ...TEST_APP, redirectUris: [s.upstream.url], providers: ["acme"], refreshExpireInHours: 24 }],
        users: [TEST_USER, ROOT],
        providers: [acme],
      },
      overrides: options.overrides,
    });
  });
  after(async () => {
    await s.server?.close();
    await s.upstream?.close();
  });
  beforeEach(async () => {
    s.page = s.chromium.page;
    s.rpcAnswers = [];
    s.page.on("response", (response: Response) => {
      if (RPC_PATH.test(new URL(response.url()).pathname)) s.rpcAnswers.push(response.text().catch(() => ""));
    });
  });

  s.signInToConsole = async (user) => {
    const { page, server } = s;
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
  };
  s.inputsHolding = (text) =>
    s.page.evaluate((t) => [...document.querySelectorAll("input, textarea")].filter((field: any) => field.value.includes(t)).length as number, text);
  s.heading = () => s.page.getByRole("heading", { level: 1 });
  s.nav = () => s.page.getByRole("navigation", { name: "Console" });
  s.openPage = async (title) => {
    await s.nav().getByRole("link", { name: title, exact: true }).click();
    await s.page.getByRole("heading", { level: 1, name: title, exact: true }).waitFor();
  };
  s.newApplicationDialog = async (name, redirectUris) => {
    await s.signInToConsole(ROOT);
    await s.openPage("Applications");
    await s.page.getByRole("button", { name: "New application" }).click();
    const dialog = s.page.getByRole("dialog", { name: "New application" });
    await dialog.getByLabel("Name", { exact: true }).fill(name);
    await dialog.getByLabel("Redirect URIs", { exact: true }).fill(redirectUris);
    return dialog;
  };
  s.dismissShownSecret = async (appName) => {
    const shown = s.page.getByRole("dialog", { name: `Client secret of ${appName}` });
    const secret = await shown.getByLabel("Client Secret", { exact: true }).inputValue();
    await shown.getByRole("button", { name: "Done" }).click();
    await shown.waitFor({ state: "detached" });
    return secret;
  };
  return s;
}
