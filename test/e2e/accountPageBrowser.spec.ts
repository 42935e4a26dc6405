import assert from "node:assert/strict";
import { Secret, TOTP } from "otpauth";
import type { Page } from "playwright-core";
import type { RunningServer } from "../../src/app/server.js";
import { useChromium } from "../support/chromium.js";
import { passwordTokens, refresh } from "../support/oauth.js";
import { startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

/** The code an authenticator app shows for a secret (RFC 6238: SHA-1, 6 digits, 30 s), `stepsAhead` steps from now. */
const appCode = (secret: string, stepsAhead = 0) =>
  new TOTP({ secret: Secret.fromBase32(secret), algorithm: "SHA1", digits: 6, period: 30 }).generate({ timestamp: Date.now() + stepsAhead * 30_000 });

/**
 * Every page load reports its CSP violations into window.__csp: the event
 * `securitypolicyviolation`, listened to by a script the DevTools protocol
 * adds, which the page's own CSP does not govern.
 */
const COLLECT_CSP = `window.__csp = []; document.addEventListener("securitypolicyviolation", (e) => window.__csp.push(e.violatedDirective + " " + e.blockedURI));`;

/** The account page (issue #46 §5) in headless Chromium: each flow, by mouse and by keyboard, at 375 px, under its CSP. */
describe("account page in headless Chromium (issue #46 §5)", function () {
  this.timeout(90_000);
  const chromium = useChromium();
  let server: RunningServer;

  before(async () => {
    server = await startTestServer({ config: { applications: [TEST_APP], users: [TEST_USER] } });
  });
  after(() => server?.close());

  async function newUser(name: string) {
    const user = { name, password: `pw-${name}-12345` };
    await server.domain.userAdmin.create(user as never);
    return user;
  }

  async function signIn(page: Page, user: { name: string; password: string }): Promise<void> {
    await page.addInitScript(COLLECT_CSP);
    await page.goto(`${server.url}/account`);
    await page.getByLabel("Username").fill(user.name);
    await page.getByLabel("Password").fill(user.password);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.getByRole("heading", { name: "Your account" }).waitFor();
  }

  async function assertNoCspViolation(page: Page): Promise<void> {
    assert.deepEqual(await page.evaluate("window.__csp"), []);
  }

  it("changes the password: another browser's session and a refresh token end, this one stays", async () => {
    const user = await newUser("anna");
    const tokens = await passwordTokens(server, { user });
    const other = await chromium.newProfile();
    await signIn(other.page, user);
    await signIn(chromium.page, user);
    const { page } = chromium;
    await page.getByLabel("Current password").fill(user.password);
    await page.getByLabel(/^New password \(/).fill("pw-anna-changed-1");
    await page.getByLabel("New password again").fill("pw-anna-changed-1");
    await page.getByRole("button", { name: "Change password" }).click();
    await page.getByRole("status").filter({ hasText: "Your password is changed" }).waitFor();
    await assertNoCspViolation(page);
    await other.page.reload();
    await other.page.getByRole("heading", { name: "Sign in" }).waitFor();
    assert.equal((await refresh(server, tokens.refresh_token!)).status, 400);
  });

  it("enrols a one-time code from the shown secret, shows recovery codes once, and makes a new set", async () => {
    const user = await newUser("boris");
    await signIn(chromium.page, user);
    const { page } = chromium;
    await page.getByRole("button", { name: "Set up a one-time code from an authenticator app" }).click();
    await page.getByRole("heading", { name: "Set up a one-time code" }).waitFor();
    await page.getByText("Cannot scan? Type the key instead").click();
    const secret = (await page.locator("#totp-secret").textContent())!.trim();
    await page.getByLabel("Code from your authenticator app").fill(appCode(secret));
    await page.getByRole("button", { name: "Turn on" }).click();
    await page.getByRole("heading", { name: "Save your recovery codes" }).waitFor();
    const first = await page.locator("#recovery-codes li").allTextContents();
    assert.equal(first.length, 10);
    assert.ok(!(await page.content()).includes(secret), "the secret is gone from the page once shown");
    await page.getByRole("link", { name: "I saved them, back to my account" }).click();
    await page.locator("#recovery-left").filter({ hasText: "10" }).waitFor();
    const html = await page.content();
    assert.ok(!html.includes(secret) && !first.some((c) => html.includes(c)), "no secret or recovery code on the account page");
    await page.getByRole("button", { name: /^Make new recovery codes/ }).click();
    const second = await page.locator("#recovery-codes li").allTextContents();
    assert.equal(second.length, 10);
    assert.ok(second.every((c) => !first.includes(c)));
    await assertNoCspViolation(page);
    const boris = (await server.store.users.findByName(user.name))!;
    assert.equal(await server.domain.secondFactors.verify(boris, first[0]!), undefined, "the old set is void");
  });

  it("ends another browser's session from the list, where this browser's is marked", async () => {
    const user = await newUser("clara");
    const other = await chromium.newProfile();
    await signIn(other.page, user);
    await signIn(chromium.page, user);
    const { page } = chromium;
    await page.locator("#sessions li.current").filter({ hasText: "(this browser)" }).waitFor();
    assert.equal(await page.locator("#sessions li").count(), 2);
    await page.locator("#sessions").getByRole("button", { name: /^End the session/ }).click();
    await page.getByRole("status").filter({ hasText: "The session is ended" }).waitFor();
    assert.equal(await page.locator("#sessions li").count(), 1);
    await other.page.reload();
    await other.page.getByRole("heading", { name: "Sign in" }).waitFor();
  });

  it("keyboard only: Tab reaches every control, each labelled, and Enter activates one", async () => {
    const user = await newUser("dmitri");
    await chromium.newProfile().then((p) => signIn(p.page, user));
    await signIn(chromium.page, user);
    const { page } = chromium;
    // Each control numbered, and whether it has a label (an input) or a name (a link, a button).
    const controls: Array<{ k: string; named: boolean }> = await page.evaluate(`[...document.querySelectorAll("a[href], button, input:not([type=hidden]), summary")].map((el, i) => {
      el.dataset.k = String(i);
      const named = el.tagName === "INPUT" ? el.labels.length > 0 : (el.getAttribute("aria-label") || el.textContent || "").trim() !== "";
      return { k: String(i), named };
    })`);
    assert.ok(controls.length >= 8);
    assert.deepEqual(controls.filter((c) => !c.named), [], "every control has a label or a name");
    const reached = new Set<string>();
    for (let i = 0; i < controls.length + 2; i++) {
      await page.keyboard.press("Tab");
      const k: string | undefined = await page.evaluate("document.activeElement?.dataset.k");
      if (k) reached.add(k);
    }
    assert.deepEqual(controls.map((c) => c.k).filter((k) => !reached.has(k)), []);
    // Enter on the focused "End" button of the other session ends it.
    await page.locator("#sessions button").focus();
    await page.keyboard.press("Enter");
    await page.getByRole("status").filter({ hasText: "The session is ended" }).waitFor();
    await assertNoCspViolation(page);
  });

  it("fits 375 px with no horizontal scroll: the account page and the enrolment page", async () => {
    const { page } = await chromium.restart({ viewport: { width: 375, height: 740 } });
    const user = await newUser("emma");
    await signIn(page, user);
    const overflow = (): Promise<number> => page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth");
    assert.equal(await overflow(), 0);
    await page.getByRole("button", { name: "Set up a one-time code from an authenticator app" }).click();
    await page.getByText("Cannot scan? Type the key instead").click();
    assert.equal(await overflow(), 0, "the long setup link wraps");
    await assertNoCspViolation(page);
  });
});
