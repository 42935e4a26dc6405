import assert from "node:assert/strict";
import type { IncomingMessage } from "node:http";
import { browserCsrfToken, CSRF_COOKIE, sentFromThisBrowser } from "../../src/web/csrf.js";
import { errorPage, loginPage, signOutPage } from "../../src/web/pages.js";

const HOSTILE = `"><script>alert(1)</script><img src=x onerror=alert(2)>`;
const withCookie = (cookie?: string) => ({ headers: cookie ? { cookie } : {} }) as IncomingMessage;

describe("the pages", () => {
  it("escape every value they show: application name, user name, error, hidden fields", () => {
    const html = loginPage({ appName: HOSTILE, requestId: HOSTILE, csrfToken: HOSTILE, username: HOSTILE, error: HOSTILE, providers: [{ name: HOSTILE, label: HOSTILE, favicon: HOSTILE }] });
    assert.doesNotMatch(html, /<script>|<img src=x/);
    assert.ok(html.includes("&#60;script&#62;"), "shown as text");
    for (const page of [errorPage(HOSTILE, HOSTILE, HOSTILE), signOutPage({ csrfToken: HOSTILE, postLogoutRedirectUri: HOSTILE, state: HOSTILE, clientId: HOSTILE })]) {
      assert.doesNotMatch(page, /<script>|<img src=x/);
    }
  });

  it("carry no inline script or style, for the CSP", () => {
    const html = loginPage({ appName: "App", requestId: "r", csrfToken: "t", providers: [] });
    assert.doesNotMatch(html, /<script|style=|<style| on\w+=/i);
  });

  it("put the focus on the password after a failed attempt, and say why beside the form", () => {
    const html = loginPage({ appName: "App", requestId: "r", csrfToken: "t", providers: [], username: "alice", error: "Wrong password." });
    assert.match(html, /aria-describedby="login-error"/);
    assert.match(html, /name="password"[^>]*autofocus/);
  });
});

describe("the CSRF token of a browser", () => {
  it("is made once, then read back from the browser's cookie", () => {
    const made = browserCsrfToken(withCookie(), true);
    assert.match(made.csrfToken, /^[A-Za-z0-9_-]{43}$/);
    assert.match(made.cookies[0]!, new RegExp(`^${CSRF_COOKIE}=${made.csrfToken};.*Secure`));
    assert.deepEqual(browserCsrfToken(withCookie(`${CSRF_COOKIE}=${made.csrfToken}`), true), { csrfToken: made.csrfToken, cookies: [] });
  });

  it("counts a form as this browser's only when its token is the cookie's", () => {
    const { csrfToken } = browserCsrfToken(withCookie(), false);
    assert.equal(sentFromThisBrowser(withCookie(`${CSRF_COOKIE}=${csrfToken}`), csrfToken), true);
    assert.equal(sentFromThisBrowser(withCookie(`${CSRF_COOKIE}=${csrfToken}`), `${csrfToken.slice(1)}x`), false);
    assert.equal(sentFromThisBrowser(withCookie(), csrfToken), false);
    assert.equal(sentFromThisBrowser(withCookie(`${CSRF_COOKIE}=${csrfToken}`), undefined), false);
  });
});
