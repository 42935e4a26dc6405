import assert from "node:assert/strict";
import { decodeJwt } from "jose";
import type { RunningServer } from "../../src/app/server.js";
import { authorizeUrl, browse, CookieJar, loginFormFields, pkcePair, signIn, submit } from "../support/browserless.js";
import { FakeClock } from "../support/clock.js";
import { basicAuth, postForm, startTestServer, TEST_APP, TEST_PROVIDER, TEST_USER } from "../support/server.js";

/** An application with only the default grant, and one offering a provider. */
const CODE_ONLY_APP = { name: "code-only", clientId: "client-2", clientSecret: "secret-2-of-client-2", redirectUris: ["https://two.example.com/cb"] };
// A display name to escape on the login page.
const PROVIDER = { ...TEST_PROVIDER, displayName: "Acme <ID>" };
const FEDERATED_APP = { ...CODE_ONLY_APP, name: "federated", clientId: "client-3", providers: ["acme", "missing"] };

const CALLBACK = TEST_APP.redirectUris[0]!;

/** The response parameters of a redirect, from its query or its fragment. */
function responseParams(location: URL): URLSearchParams {
  return location.hash ? new URLSearchParams(location.hash.slice(1)) : location.searchParams;
}

describe("authorize endpoint and login form", () => {
  let server: RunningServer;
  before(async () => {
    server = await startTestServer({
      config: { applications: [TEST_APP, CODE_ONLY_APP, FEDERATED_APP], users: [TEST_USER], providers: [PROVIDER] },
    });
  });
  after(() => server.close());

  describe("no open redirect", () => {
    for (const [what, params] of [
      ["an unknown client_id", { client_id: "nobody" }],
      ["a missing client_id", { client_id: undefined }],
      ["a redirect_uri that is not registered", { redirect_uri: "https://evil.example/cb" }],
      ["a registered redirect_uri with an extra path", { redirect_uri: `${CALLBACK}/more` }],
      ["a registered redirect_uri with a query added", { redirect_uri: `${CALLBACK}?next=https://evil.example` }],
      ["a loopback redirect_uri with another host spelling", { redirect_uri: "http://localhost:9999/callback" }],
      ["a missing redirect_uri", { redirect_uri: undefined }],
      ["another application's redirect_uri", { redirect_uri: CODE_ONLY_APP.redirectUris[0] }],
    ] as const) {
      it(`shows an error page, and no Location, for ${what}`, async () => {
        const res = await browse(authorizeUrl(server.url, { ...params, response_type: "nonsense", state: undefined }), new CookieJar());
        assert.equal(res.status, 400);
        assert.equal(res.headers.get("location"), null);
        assert.match(res.headers.get("content-type")!, /^text\/html/);
        assert.match(await res.text(), /Sign-in failed/);
      });
    }

    it("shows the login page for a loopback redirect_uri on another port (RFC 8252)", async () => {
      const res = await browse(authorizeUrl(server.url, { redirect_uri: "http://127.0.0.1:43210/callback" }), new CookieJar());
      assert.equal(res.status, 200);
      const { location } = await signIn(server, { redirect_uri: "http://127.0.0.1:43210/callback" });
      assert.equal(location.origin + location.pathname, "http://127.0.0.1:43210/callback");
    });
  });

  describe("errors go back to the client with error, error_description, state and iss", () => {
    for (const [what, params, error, fragment] of [
      ["a missing state", { state: undefined }, "invalid_request", false],
      ["an unsupported response_type", { response_type: "code device" }, "unsupported_response_type", false],
      ["a missing response_type", { response_type: undefined }, "invalid_request", false],
      ["code_challenge_method=plain", { code_challenge: "a".repeat(43), code_challenge_method: "plain" }, "invalid_request", false],
      ["a code_challenge without its method", { code_challenge: pkcePair().challenge }, "invalid_request", false],
      ["a code_challenge_method without a challenge", { code_challenge_method: "S256" }, "invalid_request", false],
      ["response_type=id_token without nonce", { response_type: "id_token" }, "invalid_request", true],
      ["tokens asked for in the query", { response_type: "token", response_mode: "query" }, "invalid_request", true],
      ["prompt=none without a session", { prompt: "none" }, "login_required", false],
    ] as const) {
      it(`for ${what}`, async () => {
        const res = await browse(authorizeUrl(server.url, params), new CookieJar());
        assert.equal(res.status, 303);
        const location = new URL(res.headers.get("location")!);
        assert.equal(`${location.origin}${location.pathname}`, CALLBACK);
        assert.equal(location.hash !== "", fragment, "errors about tokens go in the fragment");
        const response = responseParams(location);
        assert.equal(response.get("error"), error);
        assert.ok(response.get("error_description"));
        assert.equal(response.get("state"), "state" in params ? null : "state-123");
        assert.equal(response.get("iss"), server.issuer);
        assert.equal(response.get("code"), null);
      });
    }

    it("for the implicit response types when the implicit grant is not enabled", async () => {
      for (const responseType of ["token", "id_token"]) {
        const url = authorizeUrl(server.url, {
          client_id: CODE_ONLY_APP.clientId, redirect_uri: CODE_ONLY_APP.redirectUris[0], response_type: responseType, nonce: "n",
        });
        const location = new URL((await browse(url, new CookieJar())).headers.get("location")!);
        assert.equal(location.origin, "https://two.example.com");
        assert.equal(responseParams(location).get("error"), "unauthorized_client");
        assert.equal(responseParams(location).get("state"), "state-123");
      }
    });
  });

  describe("the login page", () => {
    it("is plain HTML with a strict CSP, no framing and no referrer", async () => {
      const res = await browse(authorizeUrl(server.url), new CookieJar());
      assert.equal(res.status, 200);
      const csp = res.headers.get("content-security-policy")!;
      assert.match(csp, /default-src 'none'/);
      assert.match(csp, /frame-ancestors 'none'/);
      assert.doesNotMatch(csp, /unsafe-inline|script-src/);
      assert.equal(res.headers.get("x-frame-options"), "DENY");
      assert.equal(res.headers.get("referrer-policy"), "no-referrer");
      assert.equal(res.headers.get("cache-control"), "no-store");
      const html = await res.text();
      assert.match(html, /<html lang="en">/);
      assert.match(html, /<label for="username">/);
      assert.match(html, /<label for="password">/);
      assert.doesNotMatch(html, /<script|\sstyle=|\son\w+=/i, "no script, inline style or event handler");
      const css = await fetch(`${server.url}/login/assets/login.css`);
      assert.equal(css.status, 200);
      assert.match(css.headers.get("content-type")!, /^text\/css/);
    });

    it("shows the application's name and one button per configured provider, escaped", async () => {
      const res = await browse(
        authorizeUrl(server.url, { client_id: FEDERATED_APP.clientId, redirect_uri: FEDERATED_APP.redirectUris[0] }),
        new CookieJar(),
      );
      const html = await res.text();
      assert.match(html, /to continue to <strong>federated<\/strong>/);
      assert.match(html, /Sign in with Acme &#60;ID&#62;/);
      assert.match(html, /<img src="https:\/\/id\.acme\.example\/favicon\.ico" alt=""/);
      assert.match(html, /action="\/login\/oauth\/provider\/acme"/);
      assert.doesNotMatch(html, /missing/, "a provider name with no configured provider gets no button");
      // After a form the redirects go wherever the client sends the browser next (see src/web/http.ts).
      assert.doesNotMatch(res.headers.get("content-security-policy")!, /form-action/);
    });

    it("takes a POST to a provider button only with the pending request and its CSRF token", async () => {
      const jar = new CookieJar();
      const page = await browse(
        authorizeUrl(server.url, { client_id: FEDERATED_APP.clientId, redirect_uri: FEDERATED_APP.redirectUris[0] }),
        jar,
      );
      const fields = loginFormFields(await page.text());
      assert.equal((await submit(`${server.url}/login/oauth/provider/acme`, { request: fields.request }, jar)).status, 403);
      assert.equal((await submit(`${server.url}/login/oauth/provider/other`, fields, jar)).status, 404);
      const sent = await submit(`${server.url}/login/oauth/provider/acme`, fields, jar);
      assert.equal(sent.status, 303);
      assert.ok(sent.headers.get("location")!.startsWith(`${PROVIDER.authUrl}?client_id=${PROVIDER.clientId}&`));
    });

    it("answers other methods with 405 and Allow", async () => {
      const res = await fetch(`${server.url}/login`);
      assert.equal(res.status, 405);
      assert.equal(res.headers.get("allow"), "POST");
    });

    it("accepts the authorization request as a POST too (OIDC Core §3.1.2.1)", async () => {
      const params = new URL(authorizeUrl(server.url)).searchParams;
      const res = await fetch(`${server.url}/login/oauth/authorize`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: params.toString(),
      });
      assert.equal(res.status, 200);
      assert.ok(loginFormFields(await res.text()).request);
    });
  });

  describe("signing in", () => {
    it("redirects with code, state and iss, and the code carries the sign-in", async () => {
      const { location, jar } = await signIn(server, { scope: "openid profile", nonce: "nonce-1" });
      assert.equal(`${location.origin}${location.pathname}`, CALLBACK);
      assert.equal(location.searchParams.get("state"), "state-123");
      assert.equal(location.searchParams.get("iss"), server.issuer);
      const code = location.searchParams.get("code")!;
      assert.ok(Buffer.from(code, "base64url").length >= 16, "at least 128 bits");
      const session = jar.get("identity_session");
      assert.ok(session);
      const tokens = await postForm(
        `${server.url}/api/login/oauth/access_token`,
        { grant_type: "authorization_code", code, redirect_uri: CALLBACK },
        { authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret) },
      );
      assert.equal(tokens.status, 200);
      const idToken = decodeJwt(tokens.body.id_token);
      assert.equal(idToken.nonce, "nonce-1");
      assert.equal(idToken.preferred_username, TEST_USER.name);
      assert.equal(typeof idToken.auth_time, "number");
    });

    it("sets the session cookie HttpOnly, SameSite=Lax, Path=/ (not Secure on an http issuer)", async () => {
      const jar = new CookieJar();
      const page = await browse(authorizeUrl(server.url), jar);
      const res = await fetch(`${server.url}/login`, {
        method: "POST",
        redirect: "manual",
        headers: { cookie: jar.header(), "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ ...loginFormFields(await page.text()), username: TEST_USER.name, password: TEST_USER.password }),
      });
      const sessionCookie = res.headers.getSetCookie().find((c) => c.startsWith("identity_session="))!;
      assert.match(sessionCookie, /; Path=\/; Max-Age=28800; HttpOnly; SameSite=Lax$/);
      assert.equal(res.headers.get("referrer-policy"), "no-referrer");
    });

    it("skips the form while the session lives, and prompt=login brings it back", async () => {
      const { jar } = await signIn(server);
      const again = await browse(authorizeUrl(server.url, { state: "second" }), jar);
      assert.equal(again.status, 303);
      const location = new URL(again.headers.get("location")!);
      assert.ok(location.searchParams.get("code"));
      assert.equal(location.searchParams.get("state"), "second");

      const forced = await browse(authorizeUrl(server.url, { prompt: "login" }), jar);
      assert.equal(forced.status, 200);
      assert.ok(loginFormFields(await forced.text()).request);
    });

    it("answers response_type=token with the access token in the fragment", async () => {
      const { location } = await signIn(server, { response_type: "token", scope: "openid email" });
      assert.equal(location.search, "");
      const fragment = new URLSearchParams(location.hash.slice(1));
      assert.equal(fragment.get("token_type"), "Bearer");
      assert.equal(fragment.get("expires_in"), "3600");
      assert.equal(fragment.get("scope"), "openid email");
      assert.equal(fragment.get("state"), "state-123");
      assert.equal(fragment.get("iss"), server.issuer);
      assert.equal(fragment.get("refresh_token"), null);
      const introspection = await postForm(
        `${server.url}/api/login/oauth/introspect`,
        { token: fragment.get("access_token")! },
        { authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret) },
      );
      assert.equal(introspection.body.active, true);
    });

    it("answers response_type=id_token with only an ID token in the fragment", async () => {
      const { location } = await signIn(server, { response_type: "id_token", scope: "openid email", nonce: "n-42" });
      const fragment = new URLSearchParams(location.hash.slice(1));
      assert.deepEqual([...fragment.keys()].sort(), ["id_token", "iss", "state"]);
      const claims = decodeJwt(fragment.get("id_token")!);
      assert.equal(claims.nonce, "n-42");
      assert.equal(claims.aud, TEST_APP.clientId);
      assert.equal(claims.email, TEST_USER.email, "with no access token, the scope's claims are in the ID token");
    });

    it("shows the same error for a wrong password and an unknown user, and keeps what was typed escaped", async () => {
      const pages: string[] = [];
      for (const username of [TEST_USER.name, 'nobody"><script>alert(1)</script>']) {
        const jar = new CookieJar();
        const page = await browse(authorizeUrl(server.url), jar);
        const res = await submit(`${server.url}/login`, { ...loginFormFields(await page.text()), username, password: "wrong" }, jar);
        assert.equal(res.status, 400);
        assert.equal(res.headers.get("location"), null);
        const html = await res.text();
        assert.match(html, /role="alert">Invalid username or password\.</);
        assert.doesNotMatch(html, /<script>/);
        pages.push(html.replace(/value="[^"]*"/g, ""));
      }
      assert.equal(pages[0], pages[1]);
    });

    it("refuses a form without its CSRF token, or with another browser's", async () => {
      const jar = new CookieJar();
      const page = await browse(authorizeUrl(server.url), jar);
      const fields = { ...loginFormFields(await page.text()), username: TEST_USER.name, password: TEST_USER.password };

      const missing = await submit(`${server.url}/login`, { ...fields, csrf_token: "" }, jar);
      assert.equal(missing.status, 403);
      assert.equal(missing.headers.get("location"), null);

      // Another browser with its own CSRF cookie cannot complete this browser's request.
      const other = new CookieJar();
      await browse(authorizeUrl(server.url), other);
      const foreign = await submit(`${server.url}/login`, { ...fields, csrf_token: other.get("identity_csrf")! }, other);
      assert.equal(foreign.status, 400);
      assert.equal(foreign.headers.get("location"), null);

      // The genuine form still works, once.
      assert.equal((await submit(`${server.url}/login`, fields, jar)).status, 303);
      assert.equal((await submit(`${server.url}/login`, fields, jar)).status, 400);
    });
  });

  it("is listed in discovery", async () => {
    const doc = (await (await fetch(`${server.url}/.well-known/openid-configuration`)).json()) as Record<string, any>;
    assert.equal(doc.authorization_endpoint, `${server.issuer}/login/oauth/authorize`);
    assert.deepEqual(doc.response_types_supported, ["code", "token", "id_token", "id_token token", "code id_token", "code token", "code id_token token"]);
    assert.deepEqual(doc.response_modes_supported, ["query", "fragment", "form_post"]);
    assert.equal(doc.authorization_response_iss_parameter_supported, true);
    assert.ok(doc.grant_types_supported.includes("authorization_code"));
    assert.ok(doc.grant_types_supported.includes("implicit"));
    assert.deepEqual(doc.code_challenge_methods_supported, ["S256"]);
  });
});

describe("sign-in behind an https issuer", () => {
  let server: RunningServer;
  before(async () => (server = await startTestServer({ overrides: { issuer: "https://id.example.com" } })));
  after(() => server.close());

  it("marks the CSRF and session cookies Secure, and puts the issuer in iss", async () => {
    const jar = new CookieJar();
    const page = await browse(authorizeUrl(server.url), jar);
    assert.match(page.headers.getSetCookie()[0]!, /^identity_csrf=.*; Secure$/);
    const fields = { ...loginFormFields(await page.text()), username: TEST_USER.name, password: TEST_USER.password };
    const res = await submit(`${server.url}/login`, fields, jar);
    assert.match(res.headers.getSetCookie()[0]!, /^identity_session=.*; HttpOnly; SameSite=Lax; Secure$/);
    assert.equal(new URL(res.headers.get("location")!).searchParams.get("iss"), "https://id.example.com");
  });
});

describe("sign-in with an injected clock", () => {
  const clock = new FakeClock();
  let server: RunningServer;
  before(async () => {
    server = await startTestServer({ clock, overrides: { sessionTtlSeconds: 600, loginMaxFailures: 3, loginLockoutSeconds: 60 } });
  });
  after(() => server.close());

  describe("sessions", () => {
    const codeOrError = async (jar: CookieJar, params: Record<string, string>) => {
      const res = await browse(authorizeUrl(server.url, params), jar);
      if (res.status === 200) return "login form";
      const response = new URL(res.headers.get("location")!).searchParams;
      return response.get("code") ? "code" : response.get("error");
    };

    it("honour max_age and prompt=none, and show the form again once the session expires", async () => {
      const { jar } = await signIn(server);
      clock.advanceSeconds(120);
      assert.equal(await codeOrError(jar, { prompt: "none" }), "code");
      assert.equal(await codeOrError(jar, { prompt: "none", max_age: "300" }), "code");
      assert.equal(await codeOrError(jar, { prompt: "none", max_age: "60" }), "login_required");
      assert.equal(await codeOrError(jar, { max_age: "60" }), "login form");
      clock.advanceSeconds(600);
      assert.equal(await codeOrError(jar, {}), "login form");
      assert.equal(await codeOrError(jar, { prompt: "none" }), "login_required");
    });
  });

  describe("brute-force policy", () => {
    const passwordGrant = (username: string, password: string) =>
      postForm(
        `${server.url}/api/login/oauth/access_token`,
        { grant_type: "password", username, password },
        { authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret) },
      );

    it("locks a user name after repeated failures on the form and the password grant alike, then lets it go", async () => {
      const jar = new CookieJar();
      const page = await browse(authorizeUrl(server.url), jar);
      const fields = loginFormFields(await page.text());
      await submit(`${server.url}/login`, { ...fields, username: TEST_USER.name, password: "wrong-1" }, jar);
      assert.equal((await passwordGrant(TEST_USER.name, "wrong-2")).body.error_description, "invalid username or password");
      await submit(`${server.url}/login`, { ...fields, username: TEST_USER.name, password: "wrong-3" }, jar);

      const locked = await submit(`${server.url}/login`, { ...fields, username: TEST_USER.name, password: TEST_USER.password }, jar);
      assert.equal(locked.status, 400);
      assert.match(await locked.text(), /Too many failed sign-in attempts/);
      const grant = await passwordGrant(TEST_USER.name, TEST_USER.password);
      assert.equal(grant.status, 400);
      assert.equal(grant.body.error, "invalid_grant");

      clock.advanceSeconds(61);
      assert.equal((await passwordGrant(TEST_USER.name, TEST_USER.password)).status, 200);
      const res = await submit(`${server.url}/login`, { ...fields, username: TEST_USER.name, password: TEST_USER.password }, jar);
      assert.equal(res.status, 303);
    });

    it("locks names that do not exist the same way, so a lockout reveals nothing", async () => {
      for (let i = 0; i < 3; i++) assert.match((await passwordGrant("ghost", "x")).body.error_description, /invalid username/);
      assert.match((await passwordGrant("ghost", "x")).body.error_description, /too many failed/);
    });

    it("resets the count after a successful sign-in", async () => {
      await passwordGrant(TEST_USER.name, "wrong");
      await passwordGrant(TEST_USER.name, "wrong");
      assert.equal((await passwordGrant(TEST_USER.name, TEST_USER.password)).status, 200);
      await passwordGrant(TEST_USER.name, "wrong");
      await passwordGrant(TEST_USER.name, "wrong");
      assert.equal((await passwordGrant(TEST_USER.name, TEST_USER.password)).status, 200);
    });
  });
});
