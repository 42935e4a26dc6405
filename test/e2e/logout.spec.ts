import assert from "node:assert/strict";
import { generateKeyPair, SignJWT } from "jose";
import { SESSION_COOKIE } from "../../src/oauth/sessions.js";
import type { RunningServer } from "../../src/app/server.js";
import { FakeClock } from "../support/clock.js";
import { browse, confirmSignOut, CookieJar, signOutFormFields, submit } from "../support/browserless.js";
import { GrpcCaller, oauthErrorOf } from "../support/grpc.js";
import { getJson, passwordTokens } from "../support/oauth.js";
import { startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

const REDIRECT = TEST_APP.redirectUris[0]!;

describe("sign-out (/api/logout)", () => {
  const clock = new FakeClock();
  let server: RunningServer;
  let idToken: string;
  before(async () => {
    server = await startTestServer({ clock });
    idToken = (await passwordTokens(server)).id_token!;
  });
  after(() => server.close());

  /** A fresh browser session for TEST_USER, as the Cookie header value. */
  async function signIn(): Promise<string> {
    const alice = await server.domain.userAdmin.get(TEST_USER.name);
    return `${SESSION_COOKIE}=${(await server.domain.sessions.create(alice)).cookie}`;
  }
  const signedIn = async (cookie: string) => (await getJson(`${server.url}/api/get-account`, { cookie })).status === 200;
  const logout = (query: Record<string, string>, cookie: string, init: RequestInit = {}) =>
    fetch(`${server.url}/api/logout?${new URLSearchParams(query)}`, { redirect: "manual", ...init, headers: { cookie, ...init.headers } });

  /** A browser holding a fresh session for TEST_USER. */
  async function signedInBrowser(): Promise<{ jar: CookieJar; cookie: string }> {
    const cookie = await signIn();
    return { jar: new CookieJar().set(SESSION_COOKIE, cookie.slice(SESSION_COOKIE.length + 1)), cookie };
  }

  // Changed with issue 24 (sign-out without consent): without an id_token_hint the user confirms first.
  it("ends the session and clears the cookie", async () => {
    const { jar, cookie } = await signedInBrowser();
    assert.equal(await signedIn(cookie), true);
    const res = await confirmSignOut(server.url, jar);
    assert.equal(res.status, 200);
    assert.match(await res.text(), /signed out/);
    assert.match(res.headers.get("set-cookie") ?? "", new RegExp(`^${SESSION_COOKIE}=;.*Max-Age=0`));
    assert.equal(await signedIn(cookie), false);
  });

  it("ends the session at once, with the JSON answer, given a valid id_token_hint", async () => {
    const cookie = await signIn();
    const res = await logout({ id_token_hint: idToken }, cookie);
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { status: "ok", msg: "", data: "" });
    assert.match(res.headers.get("set-cookie") ?? "", new RegExp(`^${SESSION_COOKIE}=;.*Max-Age=0`));
    assert.equal(await signedIn(cookie), false);
  });

  describe("sign-out without consent", () => {
    it("only asks: a GET or a form POST from any page, without id_token_hint, shows a confirmation page and the session survives", async () => {
      const cookie = await signIn();
      const asked = [
        await logout({}, cookie),
        await logout({ client_id: TEST_APP.clientId, post_logout_redirect_uri: REDIRECT, state: "s" }, cookie),
        await fetch(`${server.url}/api/logout`, {
          method: "POST",
          redirect: "manual",
          headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({ client_id: TEST_APP.clientId, post_logout_redirect_uri: REDIRECT }).toString(),
        }),
      ];
      for (const res of asked) {
        assert.equal(res.status, 200);
        assert.equal(res.headers.get("content-type"), "text/html; charset=utf-8");
        assert.equal(res.headers.get("set-cookie")?.includes(`${SESSION_COOKIE}=;`) ?? false, false, "the session cookie is kept");
        assert.ok(signOutFormFields(await res.text()).csrf_token);
      }
      assert.equal(await signedIn(cookie), true);
    });

    it("refuses the confirmation without this browser's CSRF token, or with another browser's, and the session survives", async () => {
      const { jar, cookie } = await signedInBrowser();
      const fields = signOutFormFields(await (await browse(`${server.url}/api/logout`, jar)).text());
      const other = new CookieJar();
      const othersToken = signOutFormFields(await (await browse(`${server.url}/api/logout`, other)).text()).csrf_token!;
      const forged = [
        { ...fields, csrf_token: "" },
        { ...fields, csrf_token: othersToken },
        // One character changed (to another: a token may already end in "A").
        { ...fields, csrf_token: `${fields.csrf_token!.slice(0, -1)}${fields.csrf_token!.endsWith("A") ? "B" : "A"}` },
      ];
      for (const form of forged) {
        const res = await submit(`${server.url}/api/logout`, form, jar);
        assert.equal(res.status, form.csrf_token ? 403 : 200, JSON.stringify(form));
        if (form.csrf_token) assert.equal(((await res.json()) as { error: string }).error, "access_denied");
      }
      // The right token from a request that lacks this browser's CSRF cookie (a cross-site post carries no Lax cookie).
      const withoutCookie = await fetch(`${server.url}/api/logout`, {
        method: "POST",
        redirect: "manual",
        headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams(fields).toString(),
      });
      assert.equal(withoutCookie.status, 403);
      assert.equal(await signedIn(cookie), true);
    });

    it("signs out on the confirmation, and keeps post_logout_redirect_uri and state through it", async () => {
      const { jar, cookie } = await signedInBrowser();
      const page = await browse(`${server.url}/api/logout?${new URLSearchParams({ client_id: TEST_APP.clientId, post_logout_redirect_uri: REDIRECT, state: "s t&1<" })}`, jar);
      const fields = signOutFormFields(await page.text());
      assert.deepEqual({ ...fields, csrf_token: "" }, { csrf_token: "", client_id: TEST_APP.clientId, post_logout_redirect_uri: REDIRECT, state: "s t&1<" });
      const res = await submit(`${server.url}/api/logout`, fields, jar);
      assert.equal(res.status, 303);
      const location = new URL(res.headers.get("location")!);
      assert.equal(`${location.origin}${location.pathname}`, REDIRECT);
      assert.equal(location.searchParams.get("state"), "s t&1<");
      assert.match(res.headers.get("set-cookie") ?? "", new RegExp(`^${SESSION_COOKIE}=;.*Max-Age=0`));
      assert.equal(await signedIn(cookie), false);
    });

    it("shows the confirmation under the pages' CSP: no script, no inline style", async () => {
      const res = await logout({}, await signIn());
      assert.match(res.headers.get("content-security-policy") ?? "", /default-src 'none'; style-src 'self'/);
      assert.doesNotMatch(res.headers.get("content-security-policy") ?? "", /script-src|unsafe-inline/);
      assert.equal(res.headers.get("x-frame-options"), "DENY");
      assert.equal(res.headers.get("cache-control"), "no-store");
      assert.doesNotMatch(await res.text(), /<script|<style|\sstyle=|\son[a-z]+=|javascript:/i);
    });
  });

  it("redirects to a registered post_logout_redirect_uri with state, given an id_token_hint", async () => {
    const cookie = await signIn();
    const res = await logout({ id_token_hint: idToken, post_logout_redirect_uri: REDIRECT, state: "s t&1" }, cookie);
    assert.equal(res.status, 302);
    const location = new URL(res.headers.get("location")!);
    assert.equal(`${location.origin}${location.pathname}`, REDIRECT);
    assert.equal(location.searchParams.get("state"), "s t&1");
    assert.equal(await signedIn(cookie), false);
  });

  it("takes any port on a registered loopback post_logout_redirect_uri, as redirect_uri does (RFC 8252 §7.3), and nothing looser", async () => {
    // REDIRECT is http://127.0.0.1:9999/callback; a native app's listener picks its port at run time.
    const cookie = await signIn();
    const elsewhere = "http://127.0.0.1:51234/callback";
    const res = await logout({ id_token_hint: idToken, post_logout_redirect_uri: elsewhere, state: "p" }, cookie);
    assert.equal(res.status, 302);
    assert.equal(res.headers.get("location"), `${elsewhere}?state=p`);
    assert.equal(await signedIn(cookie), false);

    // Without the hint too: the confirmation carries it and its answer goes there.
    const browser = await signedInBrowser();
    const asked = await submit(`${server.url}/api/logout`, { client_id: TEST_APP.clientId, post_logout_redirect_uri: "http://127.0.0.1/callback" }, browser.jar);
    assert.equal(asked.status, 200);
    const confirmed = await submit(`${server.url}/api/logout`, signOutFormFields(await asked.text()), browser.jar);
    assert.equal(confirmed.status, 303);
    assert.equal(confirmed.headers.get("location"), "http://127.0.0.1/callback");

    const kept = await signIn();
    for (const other of ["http://127.0.0.1:51234/other", "http://localhost:9999/callback", "http://127.0.0.2:9999/callback", "https://127.0.0.1:9999/callback"]) {
      const refused = await logout({ id_token_hint: idToken, post_logout_redirect_uri: other }, kept);
      assert.equal(refused.status, 400, other);
      assert.equal(((await refused.json()) as { error: string }).error, "invalid_request");
    }
    assert.equal(await signedIn(kept), true);
  });

  it("accepts an expired ID token as hint", async () => {
    clock.advanceSeconds(TEST_APP.expireInHours * 3600 + 1);
    const res = await logout({ id_token_hint: idToken, post_logout_redirect_uri: REDIRECT }, await signIn());
    assert.equal(res.status, 302);
  });

  // Changed with issue 24 (sign-out without consent): without the hint the user confirms first, and the form's answer is a 303.
  it("also takes POST with a form body, and client_id instead of the hint", async () => {
    const { jar, cookie } = await signedInBrowser();
    const asked = await submit(`${server.url}/api/logout`, { client_id: TEST_APP.clientId, post_logout_redirect_uri: REDIRECT }, jar);
    assert.equal(asked.status, 200);
    const res = await submit(`${server.url}/api/logout`, signOutFormFields(await asked.text()), jar);
    assert.equal(res.status, 303);
    assert.equal(res.headers.get("location"), REDIRECT);
    assert.equal(await signedIn(cookie), false);
  });

  it("refuses bad requests with 400 and leaves the session alone", async () => {
    const cookie = await signIn();
    const { privateKey } = await generateKeyPair("RS256");
    const forged = await new SignJWT({ iss: server.issuer, aud: TEST_APP.clientId, sub: "x" })
      .setProtectedHeader({ alg: "RS256", kid: "forged" })
      .sign(privateKey);
    const accessToken = (await passwordTokens(server)).access_token;
    const bad: Record<string, string>[] = [
      { id_token_hint: idToken, post_logout_redirect_uri: "https://evil.example/cb" },
      { id_token_hint: forged, post_logout_redirect_uri: REDIRECT },
      { id_token_hint: accessToken, post_logout_redirect_uri: REDIRECT },
      { post_logout_redirect_uri: REDIRECT },
      { id_token_hint: idToken, client_id: "someone-else", post_logout_redirect_uri: REDIRECT },
    ];
    for (const query of bad) {
      const res = await logout(query, cookie);
      assert.equal(res.status, 400, JSON.stringify(query));
      assert.equal(((await res.json()) as { error: string }).error, "invalid_request");
    }
    assert.equal(await signedIn(cookie), true);
  });

  it("is listed in discovery with the other new endpoints", async () => {
    const doc = (await getJson(`${server.url}/.well-known/openid-configuration`)).body;
    assert.equal(doc.end_session_endpoint, `${server.issuer}/api/logout`);
    assert.equal(doc.revocation_endpoint, `${server.issuer}/api/login/oauth/revoke`);
    assert.equal(doc.userinfo_endpoint, `${server.issuer}/api/userinfo`);
    assert.deepEqual(doc.revocation_endpoint_auth_methods_supported, ["client_secret_basic", "client_secret_post", "client_secret_jwt", "private_key_jwt", "none"]);
    assert.ok(doc.grant_types_supported.includes("refresh_token"));
  });

  it("serves EndSession over gRPC with the session cookie as metadata", async () => {
    const grpc = new GrpcCaller(server.url);
    try {
      const cookie = await signIn();
      const res = await grpc.call(
        "IntrospectionService",
        "EndSession",
        { id_token_hint: idToken, post_logout_redirect_uri: REDIRECT, state: "xyz" },
        { cookie },
      );
      assert.equal(res.redirect_uri, `${REDIRECT}?state=xyz`);
      assert.equal(await signedIn(cookie), false);
      await assert.rejects(
        grpc.call("IntrospectionService", "EndSession", { post_logout_redirect_uri: REDIRECT }),
        (err) => oauthErrorOf(err) === "invalid_request",
      );
    } finally {
      grpc.close();
    }
  });
});
