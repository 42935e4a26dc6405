import { chromium, type Browser, type BrowserContext, type BrowserContextOptions, type Page } from "playwright-core";
import { scaledMs } from "./deadline.js";

/** How long a page action or navigation may take before it fails: long enough on a loaded machine, short of the test's own timeout. */
const PAGE_TIMEOUT_MS = 10_000;

/** Debian's Chromium, headless, as CI installs it. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-background-networking", "--disable-gpu", "--no-first-run"],
  });
}

/** One browser profile (no cookies to begin with) and its page, with the Content Security Policy violations its pages reported. */
export interface Profile {
  context: BrowserContext;
  page: Page;
  cspViolations: string[];
}

/** A fresh profile with one page, collecting Content Security Policy violations. Prefer `useChromium`, which closes and checks it. */
export async function freshPage(browser: Browser, options: BrowserContextOptions = {}): Promise<Profile> {
  const context = await browser.newContext(options);
  const page = await context.newPage();
  page.setDefaultTimeout(scaledMs(PAGE_TIMEOUT_MS));
  const cspViolations: string[] = [];
  page.on("console", (message) => {
    if (/Content Security Policy/i.test(message.text())) cspViolations.push(message.text());
  });
  return { context, page, cspViolations };
}

/** What `useChromium` gives a spec: the browser, and the current test's profile and page. */
export interface ChromiumSession extends Profile {
  browser: Browser;
  /**
   * Another profile for the current test, beside the current one (another
   * person's browser). Closed after the test, and its pages held to their CSP.
   */
  newProfile(options?: BrowserContextOptions): Promise<Profile>;
  /**
   * Close the current profile and go on in a fresh one (a browser with no
   * session, or with other options, such as `{ javaScriptEnabled: false }`).
   * What the closed one's pages reported still counts against the test.
   */
  restart(options?: BrowserContextOptions): Promise<Profile>;
}

export interface ChromiumOptions {
  /** The options of every profile the session opens (e.g. `{ ignoreHTTPSErrors: true }`); `newProfile` and `restart` may add to them. */
  context?: BrowserContextOptions;
}

/**
 * The one Chromium fixture: the mocha hooks of a spec that drives the
 * browser. One browser for the describe block, a fresh profile (context and
 * page) for each test, and after each test every profile it opened closed
 * and no Content Security Policy violation on any of its pages. Call it at
 * the top of the describe block (before hooks that use the page) and read
 * the session's fields inside the tests:
 *
 *     const chromium = useChromium();
 *     it("…", async () => { await chromium.page.goto(url); });
 */
export function useChromium(options: ChromiumOptions = {}): ChromiumSession {
  let opened: Profile[] = [];
  const open = async (extra: BrowserContextOptions = {}) => {
    const profile = await freshPage(session.browser, { ...options.context, ...extra });
    opened.push(profile);
    return profile;
  };
  const session = {
    newProfile: open,
    async restart(extra?: BrowserContextOptions) {
      await session.context.close();
      const profile = await open(extra);
      Object.assign(session, profile);
      return profile;
    },
  } as ChromiumSession;
  before(async () => {
    session.browser = await launchChromium();
  });
  after(async () => {
    await session.browser?.close();
  });
  beforeEach(async () => {
    Object.assign(session, await open());
  });
  afterEach(async () => {
    // Nothing opened when the browser never started: the hook that failed says why.
    const profiles = opened;
    opened = [];
    await Promise.all(profiles.map((p) => p.context.close()));
    const violations = profiles.flatMap((p) => p.cspViolations);
    if (violations.length) throw new Error(`the pages broke their own CSP: ${violations.join("; ")}`);
  });
  return session;
}
