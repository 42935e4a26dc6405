import assert from "node:assert/strict";
import type { RunningServer } from "../../src/app/server.js";
import { authorizeUrl, browse, CookieJar, loginFormFields, signIn, signOutFormFields, submit } from "../support/browserless.js";
import { postForm, startTestServer, TEST_APP, TEST_PROVIDER, TEST_USER } from "../support/server.js";

/**
 * What every HTML page must say: no script at all (default-src 'none' and
 * no script-src), no framing by anyone (CSP and X-Frame-Options), no
 * Referer (the URL may hold a code or a pending request), no sniffing, no
 * caching; and a body with no inline script, style or handler to allow.
 */
async function assertSecurePage(res: Response, status: number): Promise<void> {
  assert.equal(res.status, status);
  assert.equal(res.headers.get("content-type"), "text/html; charset=utf-8");
  const csp = Object.fromEntries(
    (res.headers.get("content-security-policy") ?? "").split(";").map((d) => d.trim().split(/\s+/)).map(([name, ...values]) => [name, values.join(" ")]),
  );
  assert.equal(csp["default-src"], "'none'");
  assert.equal(csp["script-src"], undefined, "no script source at all");
  assert.equal(csp["style-src"], "'self'");
  assert.equal(csp["frame-ancestors"], "'none'");
  assert.equal(csp["base-uri"], "'none'");
  // No form-action: a sign-in's form post is followed by a chain of redirects
  // (client, provider, a downstream service when we are the provider) whose
  // origins a page cannot know, and Chromium checks every hop.
  assert.equal(csp["form-action"], undefined);
  assert.equal(res.headers.get("x-frame-options"), "DENY");
  assert.equal(res.headers.get("referrer-policy"), "no-referrer");
  assert.equal(res.headers.get("x-content-type-options"), "nosniff");
  assert.equal(res.headers.get("cache-control"), "no-store");
  assert.doesNotMatch(await res.text(), /<script|\sstyle=|\son[a-z]+=|javascript:/i);
}

describe("security headers on every HTML page and every redirect that carries a code or token", () => {
  let server: RunningServer;
  before(async () => {
    server = await startTestServer({
      config: { applications: [{ ...TEST_APP, providers: [TEST_PROVIDER.name] }], users: [TEST_USER], providers: [TEST_PROVIDER] },
    });
  });
  after(() => server.close());

  /** A browser holding a login page: its cookie jar and the form's hidden fields. */
  async function atLoginPage() {
    const jar = new CookieJar();
    const fields = loginFormFields(await (await browse(authorizeUrl(server.url), jar)).text());
    return { jar, fields };
  }

  const PAGES: Array<{ page: string; status: number; fetch: () => Promise<Response> }> = [
    { page: "the login page", status: 200, fetch: () => browse(authorizeUrl(server.url), new CookieJar()) },
    {
      page: "the login page after a wrong password",
      status: 400,
      fetch: async () => {
        const { jar, fields } = await atLoginPage();
        return submit(`${server.url}/login`, { ...fields, username: TEST_USER.name, password: "wrong" }, jar);
      },
    },
    { page: "the error page for an unknown client", status: 400, fetch: () => browse(authorizeUrl(server.url, { client_id: "nobody" }), new CookieJar()) },
    {
      page: "the error page for an unregistered redirect_uri",
      status: 400,
      fetch: () => browse(authorizeUrl(server.url, { redirect_uri: "https://evil.example/cb" }), new CookieJar()),
    },
    {
      page: "the error page for a form without its CSRF token",
      status: 403,
      fetch: async () => {
        const { fields } = await atLoginPage();
        return submit(`${server.url}/login`, { ...fields, username: TEST_USER.name, password: TEST_USER.password }, new CookieJar());
      },
    },
    { page: "the error page for a wrong method", status: 405, fetch: () => fetch(authorizeUrl(server.url), { method: "PUT" }) },
    {
      page: "the error page for a provider not offered",
      status: 404,
      fetch: async () => {
        const { jar, fields } = await atLoginPage();
        return submit(`${server.url}/login/oauth/provider/other`, fields, jar);
      },
    },
    { page: "the sign-out confirmation page", status: 200, fetch: () => browse(`${server.url}/api/logout`, new CookieJar()) },
    {
      page: "the signed-out page",
      status: 200,
      fetch: async () => {
        const jar = new CookieJar();
        return submit(`${server.url}/api/logout`, signOutFormFields(await (await browse(`${server.url}/api/logout`, jar)).text()), jar);
      },
    },
  ];

  for (const { page, status, fetch: get } of PAGES) {
    it(`${page} (${status})`, async () => assertSecurePage(await get(), status));
  }

  it("the internal-error page (500), when the database is gone", async () => {
    const broken = await startTestServer();
    try {
      const jar = new CookieJar();
      const fields = loginFormFields(await (await browse(authorizeUrl(broken.url), jar)).text());
      await broken.store.db.destroy();
      const res = await submit(`${broken.url}/login`, { ...fields, username: TEST_USER.name, password: TEST_USER.password }, jar);
      assert.ok(res.status === 500 || res.status === 503, String(res.status));
      await assertSecurePage(res, res.status);
    } finally {
      await broken.close().catch(() => {});
    }
  });

  it("sends the code back in a 303 that is neither cached nor leaks a Referer", async () => {
    const { jar, fields } = await atLoginPage();
    const res = await submit(`${server.url}/login`, { ...fields, username: TEST_USER.name, password: TEST_USER.password }, jar);
    assert.equal(res.status, 303);
    assert.ok(new URL(res.headers.get("location")!).searchParams.get("code"));
    assert.equal(res.headers.get("referrer-policy"), "no-referrer");
    assert.equal(res.headers.get("cache-control"), "no-store");
  });

  it("sends implicit tokens in the fragment of such a 303, never in the query", async () => {
    const { jar } = await signIn(server);
    const res = await browse(authorizeUrl(server.url, { response_type: "token" }), jar);
    assert.equal(res.status, 303);
    const location = new URL(res.headers.get("location")!);
    assert.equal(location.search, "");
    assert.ok(new URLSearchParams(location.hash.slice(1)).get("access_token"));
    assert.equal(res.headers.get("referrer-policy"), "no-referrer");
    assert.equal(res.headers.get("cache-control"), "no-store");
  });

  it("serves the stylesheet as CSS that cannot be sniffed into something else", async () => {
    const res = await fetch(`${server.url}/login/assets/login.css`);
    assert.equal(res.headers.get("content-type"), "text/css; charset=utf-8");
    assert.equal(res.headers.get("x-content-type-options"), "nosniff");
  });

  // Changed with issue 24 (sign-out without consent): without an id_token_hint sign-out asks first, on a page
  // (the two page cases above); with one it answers JSON or a redirect, as this test checks.
  it("answers sign-out with JSON or a redirect, given an id_token_hint, and nothing cacheable", async () => {
    const tokens = await postForm(`${server.url}/api/login/oauth/access_token`, {
      grant_type: "password", client_id: TEST_APP.clientId, client_secret: TEST_APP.clientSecret, username: TEST_USER.name, password: TEST_USER.password, scope: "openid",
    });
    const hint = tokens.body.id_token as string;
    const json = await fetch(`${server.url}/api/logout?id_token_hint=${hint}`);
    assert.match(json.headers.get("content-type")!, /^application\/json/);
    assert.equal(json.headers.get("cache-control"), "no-store");
    const redirect = await fetch(`${server.url}/api/logout?${new URLSearchParams({ id_token_hint: hint, post_logout_redirect_uri: TEST_APP.redirectUris[0]!, state: "s" })}`, {
      redirect: "manual",
    });
    assert.equal(redirect.status, 302);
    assert.equal(redirect.headers.get("cache-control"), "no-store");
    assert.equal(redirect.headers.get("location"), `${TEST_APP.redirectUris[0]}?state=s`);
  });
});
