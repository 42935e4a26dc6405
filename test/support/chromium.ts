import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";

/** Debian's Chromium, headless, as CI installs it. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-background-networking", "--disable-gpu", "--no-first-run"],
  });
}

/** A fresh profile (no cookies) with one page, collecting Content Security Policy violations. */
export async function freshPage(browser: Browser): Promise<{ context: BrowserContext; page: Page; cspViolations: string[] }> {
  const context = await browser.newContext();
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  const cspViolations: string[] = [];
  page.on("console", (message) => {
    if (/Content Security Policy/i.test(message.text())) cspViolations.push(message.text());
  });
  return { context, page, cspViolations };
}

/** What useChromium gives a spec: the browser, and the current test's profile and page. */
export interface ChromiumSession {
  browser: Browser;
  context: BrowserContext;
  page: Page;
  cspViolations: string[];
}

/**
 * The mocha hooks of a spec that drives Chromium: one browser for the
 * describe block, a fresh profile for each test, and after each test no
 * Content Security Policy violation on any of its pages. Call it inside
 * describe and read the session's fields inside the tests.
 */
export function useChromium(): ChromiumSession {
  const session = {} as ChromiumSession;
  before(async () => {
    session.browser = await launchChromium();
  });
  after(async () => {
    await session.browser?.close();
  });
  beforeEach(async () => {
    Object.assign(session, await freshPage(session.browser));
  });
  afterEach(async () => {
    // No context when the browser never started: the hook that failed says why.
    if (!session.context) return;
    await session.context.close();
    if (session.cspViolations.length) throw new Error(`the pages broke their own CSP: ${session.cspViolations.join("; ")}`);
  });
  return session;
}
