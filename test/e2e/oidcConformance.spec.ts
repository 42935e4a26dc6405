import assert from "node:assert/strict";
import { decodeJwt } from "jose";
import * as oidc from "openid-client";
import type { RunningServer } from "../../src/app/server.js";
import { idTokenHash } from "../../src/oauth/tokens.js";
import { authorizeUrl, browse, CookieJar, loginFormFields, submit } from "../support/browserless.js";
import { FakeClock } from "../support/clock.js";
import { tokenVerifier } from "../support/oauth.js";
import { basicAuth, postForm, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

/**
 * The authorization-endpoint checks of the OpenID Foundation conformance
 * suite's Basic OP, Implicit OP and Form Post OP plans, reproduced here (the
 * suite itself needs Java and Docker). Each test is named after the
 * behaviour the suite checks.
 */
const CALLBACK = TEST_APP.redirectUris[0]!;
const CODE_ONLY = { name: "code-only", clientId: "client-2", clientSecret: "secret-2-of-client-2", redirectUris: ["https://two.example.com/cb"], grantTypes: [] };
const CREDENTIALS = { username: TEST_USER.name, password: TEST_USER.password };

/** The response parameters of a redirect, from its query or its fragment. */
function responseParams(location: URL): URLSearchParams {
  return location.hash ? new URLSearchParams(location.hash.slice(1)) : location.searchParams;
}

const unescapeHtml = (value: string) => value.replace(/&#(\d+);/g, (_, code: string) => String.fromCharCode(Number(code)));

/** The form of a form_post page: where it posts, and its fields, as a browser would send them. */
function formPost(html: string): { action: string; fields: URLSearchParams } {
  const form = /<form id="form-post" method="post" action="([^"]*)"[^>]*>([\s\S]*?)<\/form>/.exec(html);
  assert.ok(form, "a form_post form");
  const fields = new URLSearchParams();
  for (const [, name, value] of form[2]!.matchAll(/<input type="hidden" name="([^"]*)" value="([^"]*)">/g)) {
    fields.append(unescapeHtml(name!), unescapeHtml(value!));
  }
  return { action: unescapeHtml(form[1]!), fields };
}

describe("OpenID Connect conformance: the authorization endpoint", () => {
  let clock: FakeClock;
  let server: RunningServer;
  let verify: Awaited<ReturnType<typeof tokenVerifier>>;
  before(async () => {
    // Set when the suite starts, not when the file loads: openid-client checks auth_time against real time.
    clock = new FakeClock();
    server = await startTestServer({ clock, config: { applications: [TEST_APP, CODE_ONLY], users: [TEST_USER] } });
    verify = await tokenVerifier(server, TEST_APP.clientId);
  });
  after(() => server.close());

  /** GET the authorize endpoint; sign in on the form when it is shown. Returns the final answer. */
  async function authorize(params: Record<string, string | undefined>, jar = new CookieJar()): Promise<Response> {
    const res = await browse(authorizeUrl(server.url, params), jar);
    if (res.status !== 200 || !(res.headers.get("content-type") ?? "").startsWith("text/html")) return res;
    const html = await res.text();
    if (!html.includes('action="/login"')) return new Response(html, { status: res.status, headers: res.headers });
    return submit(`${server.url}/login`, { ...loginFormFields(html), ...CREDENTIALS }, jar);
  }

  /** The redirect's response parameters; fails unless the answer is a 303 to the callback. */
  async function redirected(res: Response, callback = CALLBACK): Promise<{ params: URLSearchParams; location: URL }> {
    assert.equal(res.status, 303, `expected a redirect, got ${res.status}`);
    const location = new URL(res.headers.get("location")!);
    assert.equal(`${location.origin}${location.pathname}`, callback);
    return { params: responseParams(location), location };
  }

  const redeem = (code: string) =>
    postForm(
      `${server.url}/api/login/oauth/access_token`,
      { grant_type: "authorization_code", code, redirect_uri: CALLBACK },
      { authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret) },
    );

  describe("request objects (OIDCC-6, oidcc-unsigned-request-object-supported-correctly-or-rejected-as-unsupported)", () => {
    const REQUEST_OBJECT = "eyJhbGciOiJub25lIn0.eyJzdGF0ZSI6InMifQ.";

    it("answers an unsigned request object with invalid_request_object (signed ones: test/e2e/pushedAuthorization.spec.ts)", async () => {
      const { params, location } = await redirected(await authorize({ request: REQUEST_OBJECT }));
      assert.equal(location.hash, "", "a code-flow error goes in the query");
      assert.equal(params.get("error"), "invalid_request_object");
      assert.equal(params.get("state"), "state-123");
      assert.equal(params.get("iss"), server.issuer);
      assert.equal(params.get("code"), null);
    });

    it("answers a request_uri that is a URL with request_uri_not_supported, in the fragment for implicit types: it is never fetched", async () => {
      const { params, location } = await redirected(
        await authorize({ request_uri: "https://client.example/request.jwt", response_type: "id_token token", nonce: "n" }),
      );
      assert.notEqual(location.hash, "");
      assert.equal(params.get("error"), "request_uri_not_supported");
      assert.equal(params.get("state"), "state-123");
      assert.equal(params.get("iss"), server.issuer);
    });

    it("shows the error page, never redirecting, when the redirect_uri beside a request object is not registered", async () => {
      const res = await browse(authorizeUrl(server.url, { request: REQUEST_OBJECT, redirect_uri: "https://evil.example/cb" }), new CookieJar());
      assert.equal(res.status, 400);
      assert.equal(res.headers.get("location"), null);
    });

    it("says so in discovery, explicitly: request objects yes, request_uri only from PAR", async () => {
      const doc = (await (await fetch(`${server.url}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
      assert.equal(doc.request_parameter_supported, true);
      assert.equal(doc.request_uri_parameter_supported, false);
      assert.ok((doc.response_types_supported as string[]).includes("id_token token"));
      assert.deepEqual(doc.response_modes_supported, ["query", "fragment", "form_post"]);
    });
  });

  describe("response_type=id_token token (Implicit OP)", () => {
    it("computes at_hash as OIDC Core's example does (Appendix A.4)", () => {
      assert.equal(idTokenHash("jHkWEdUXMU1BwAsC4vtUsZwnNvTIxEl0z9K3vx5KF0Y", "RS256"), "77QmUPtjPfzWtF2AnpK9RQ");
    });

    for (const responseType of ["id_token token", "token id_token"]) {
      it(`issues id_token token with at_hash (asked as "${responseType}")`, async () => {
        const { params, location } = await redirected(await authorize({ response_type: responseType, nonce: "nonce-1", scope: "openid profile" }));
        assert.equal(location.search, "", "no token in the query");
        assert.deepEqual([...params.keys()].sort(), ["access_token", "expires_in", "id_token", "iss", "scope", "state", "token_type"]);
        assert.equal(params.get("token_type"), "Bearer");
        assert.equal(params.get("state"), "state-123");
        const accessToken = params.get("access_token")!;
        const claims = await verify(params.get("id_token")!, "JWT");
        assert.equal(claims.nonce, "nonce-1");
        assert.equal(claims.at_hash, idTokenHash(accessToken, "RS256"));
        assert.equal(claims.name, TEST_USER.displayName);
        assert.equal((await verify(accessToken, "at+jwt")).sub, claims.sub);
        // The access token works at userinfo.
        const userinfo = await fetch(`${server.url}/api/userinfo`, { headers: { authorization: `Bearer ${accessToken}` } });
        assert.equal(userinfo.status, 200);
      });
    }

    it("puts at_hash in the ID token the token endpoint issues beside an access token", async () => {
      const { params } = await redirected(await authorize({ scope: "openid" }));
      const tokens = (await redeem(params.get("code")!)).body;
      assert.equal(decodeJwt(tokens.id_token).at_hash, idTokenHash(tokens.access_token, "RS256"));
    });

    it("leaves at_hash out of an ID token issued alone (response_type=id_token)", async () => {
      const { params } = await redirected(await authorize({ response_type: "id_token", nonce: "n" }));
      assert.equal(decodeJwt(params.get("id_token")!).at_hash, undefined);
    });

    it("refuses id_token token without a nonce (oidcc-ensure-request-without-nonce-fails)", async () => {
      const { params } = await redirected(await authorize({ response_type: "id_token token" }));
      assert.equal(params.get("error"), "invalid_request");
      assert.equal(params.get("access_token"), null);
    });

    it("refuses id_token token when the application has no implicit grant", async () => {
      const res = await browse(
        authorizeUrl(server.url, { client_id: CODE_ONLY.clientId, redirect_uri: CODE_ONLY.redirectUris[0], response_type: "id_token token", nonce: "n" }),
        new CookieJar(),
      );
      const { params } = await redirected(res, CODE_ONLY.redirectUris[0]);
      assert.equal(params.get("error"), "unauthorized_client");
    });
  });

  describe("response_mode=form_post (Form Post OP)", () => {
    async function formPostPage(res: Response) {
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("location"), null);
      const csp = res.headers.get("content-security-policy")!;
      assert.match(csp, /default-src 'none'/);
      assert.match(csp, /script-src 'self'/);
      assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
      assert.equal(res.headers.get("referrer-policy"), "no-referrer");
      assert.equal(res.headers.get("cache-control"), "no-store");
      assert.equal(res.headers.get("x-frame-options"), "DENY");
      const html = await res.text();
      // No inline script and no inline style: only our own script file.
      assert.deepEqual([...html.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/g)].map((m) => [m[1], m[2]]), [[' src="/login/assets/form-post.js"', ""]]);
      assert.doesNotMatch(html, /<style|\sstyle=|\son[a-z]+=/i);
      assert.match(html, /<button type="submit"[^>]*>Continue<\/button>/, "a visible button for browsers without script");
      return formPost(html);
    }

    it("posts the response as a form with form_post", async () => {
      const { action, fields } = await formPostPage(await authorize({ response_mode: "form_post" }));
      assert.equal(action, CALLBACK);
      assert.deepEqual([...fields.keys()].sort(), ["code", "iss", "state"]);
      assert.equal(fields.get("state"), "state-123");
      assert.equal(fields.get("iss"), server.issuer);
      assert.equal((await redeem(fields.get("code")!)).status, 200);
    });

    it("serves the submitting script from our origin", async () => {
      const res = await fetch(`${server.url}/login/assets/form-post.js`);
      assert.equal(res.status, 200);
      assert.match(res.headers.get("content-type")!, /^text\/javascript/);
      assert.match(await res.text(), /getElementById\("form-post"\)\.submit\(\)/);
    });

    it("lets openid-client complete the code flow from the posted form", async () => {
      const config = await oidc.discovery(new URL(server.issuer), TEST_APP.clientId, undefined, oidc.ClientSecretBasic(TEST_APP.clientSecret), {
        execute: [oidc.allowInsecureRequests],
      });
      const checks = { pkceCodeVerifier: oidc.randomPKCECodeVerifier(), expectedState: oidc.randomState(), expectedNonce: oidc.randomNonce() };
      const url = oidc.buildAuthorizationUrl(config, {
        redirect_uri: CALLBACK,
        scope: "openid email",
        response_mode: "form_post",
        code_challenge: await oidc.calculatePKCECodeChallenge(checks.pkceCodeVerifier),
        code_challenge_method: "S256",
        state: checks.expectedState,
        nonce: checks.expectedNonce,
      });
      const params = Object.fromEntries(url.searchParams);
      const { action, fields } = await formPostPage(await authorize(params));
      const callback = new Request(action, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: fields.toString() });
      const tokens = await oidc.authorizationCodeGrant(config, callback, { ...checks, idTokenExpected: true });
      assert.equal(tokens.claims()!.email, TEST_USER.email);
    });

    it("lets openid-client validate an implicit id_token from the posted form", async () => {
      const config = await oidc.discovery(new URL(server.issuer), TEST_APP.clientId, undefined, oidc.None(), { execute: [oidc.allowInsecureRequests] });
      oidc.useIdTokenResponseType(config);
      const nonce = oidc.randomNonce();
      const state = oidc.randomState();
      const url = oidc.buildAuthorizationUrl(config, { redirect_uri: CALLBACK, scope: "openid", response_mode: "form_post", nonce, state });
      const { action, fields } = await formPostPage(await authorize(Object.fromEntries(url.searchParams)));
      const callback = new Request(action, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: fields.toString() });
      const claims = await oidc.implicitAuthentication(config, callback, nonce, { expectedState: state });
      assert.equal(claims.nonce, nonce);
    });

    it("posts id_token token, signed in already, without showing the login form", async () => {
      const jar = new CookieJar();
      await authorize({}, jar);
      const res = await browse(authorizeUrl(server.url, { response_type: "id_token token", response_mode: "form_post", nonce: "n" }), jar);
      const { fields } = await formPostPage(res);
      assert.equal(decodeJwt(fields.get("id_token")!).at_hash, idTokenHash(fields.get("access_token")!, "RS256"));
    });

    it("posts errors as a form too, once the redirect_uri is trusted", async () => {
      const { action, fields } = await formPostPage(await authorize({ response_mode: "form_post", prompt: "none" }));
      assert.equal(action, CALLBACK);
      assert.equal(fields.get("error"), "login_required");
      assert.equal(fields.get("state"), "state-123");
      assert.equal(fields.get("iss"), server.issuer);
      const unsupported = await formPostPage(await authorize({ response_mode: "form_post", response_type: "code device" }));
      assert.equal(unsupported.fields.get("error"), "unsupported_response_type");
    });

    it("refuses an unknown response_mode with invalid_request", async () => {
      const { params } = await redirected(await authorize({ response_mode: "web_message" }));
      assert.equal(params.get("error"), "invalid_request");
      assert.match(params.get("error_description")!, /response_mode/);
    });
  });

  describe("login_hint (oidcc-login-hint)", () => {
    it("prefills login_hint", async () => {
      const res = await browse(authorizeUrl(server.url, { login_hint: TEST_USER.name }), new CookieJar());
      assert.equal(res.status, 200);
      assert.match(await res.text(), new RegExp(`<input id="username" name="username"[^>]* value="${TEST_USER.name}"`));
    });

    it("signs in as whoever signs in, whatever the hint", async () => {
      const { params } = await redirected(await authorize({ login_hint: "buffy@example.com" }));
      assert.ok(params.get("code"));
    });
  });

  describe("prompt, max_age and acr_values", () => {
    it("prompt=none without a session: login_required", async () => {
      const code = await redirected(await browse(authorizeUrl(server.url, { prompt: "none", state: "s".repeat(128) }), new CookieJar()));
      assert.equal(code.params.get("error"), "login_required");
      assert.equal(code.params.get("state"), "s".repeat(128), "a long state comes back intact");
      const implicit = await redirected(await browse(authorizeUrl(server.url, { prompt: "none", response_type: "id_token token", nonce: "n" }), new CookieJar()));
      assert.notEqual(implicit.location.hash, "");
      assert.equal(implicit.params.get("error"), "login_required");
    });

    it("prompt=none with a session answers at once, with an id_token_hint too (oidcc-prompt-none-logged-in, oidcc-id-token-hint)", async () => {
      const jar = new CookieJar();
      const first = await redirected(await authorize({ response_type: "id_token", nonce: "n1" }, jar));
      const hint = first.params.get("id_token")!;
      const again = await redirected(await browse(authorizeUrl(server.url, { response_type: "id_token", nonce: "n2", prompt: "none", id_token_hint: hint }), jar));
      const [a, b] = [decodeJwt(hint), decodeJwt(again.params.get("id_token")!)];
      assert.equal(b.sub, a.sub);
      assert.equal(b.auth_time, a.auth_time);
    });

    it("prompt=login forces a fresh sign-in", async () => {
      const jar = new CookieJar();
      await authorize({}, jar);
      const res = await browse(authorizeUrl(server.url, { prompt: "login" }), jar);
      assert.equal(res.status, 200);
      assert.match(await res.text(), /action="\/login"/);
    });

    it("max_age is checked by openid-client against auth_time (before the test clock moves)", async () => {
      const config = await oidc.discovery(new URL(server.issuer), TEST_APP.clientId, undefined, oidc.None(), { execute: [oidc.allowInsecureRequests] });
      oidc.useIdTokenResponseType(config);
      const [nonce, state] = [oidc.randomNonce(), oidc.randomState()];
      // The test clock stands still while real time runs: a max_age of minutes, not seconds.
      const url = oidc.buildAuthorizationUrl(config, { redirect_uri: CALLBACK, scope: "openid", nonce, state, max_age: "300" });
      const { location } = await redirected(await authorize(Object.fromEntries(url.searchParams)));
      const claims = await oidc.implicitAuthentication(config, location, nonce, { expectedState: state, maxAge: 300 });
      assert.equal(typeof claims.auth_time, "number");
    });

    it("max_age forces a fresh sign-in and adds auth_time", async () => {
      const jar = new CookieJar();
      const first = decodeJwt((await redirected(await authorize({ response_type: "id_token", nonce: "n" }, jar))).params.get("id_token")!);
      clock.advanceSeconds(120);
      // Within max_age: no form, and the first sign-in's auth_time.
      const recent = await redirected(await browse(authorizeUrl(server.url, { response_type: "id_token", nonce: "n", max_age: "10000" }), jar));
      assert.equal(decodeJwt(recent.params.get("id_token")!).auth_time, first.auth_time);
      // Older than max_age: the form again, then a later auth_time.
      const page = await browse(authorizeUrl(server.url, { max_age: "60" }), jar);
      assert.equal(page.status, 200);
      const res = await submit(`${server.url}/login`, { ...loginFormFields(await page.text()), ...CREDENTIALS }, jar);
      const tokens = (await redeem((await redirected(res)).params.get("code")!)).body;
      const second = decodeJwt(tokens.id_token);
      assert.equal(second.auth_time, Math.floor(clock.now() / 1000));
      assert.ok((second.auth_time as number) > (first.auth_time as number));
    });

    it("accepts acr_values without failing (oidcc-ensure-request-with-acr-values-succeeds)", async () => {
      const { params } = await redirected(await authorize({ acr_values: "1 2" }));
      assert.ok(params.get("code"));
    });

    it("accepts display, ui_locales, claims_locales and unknown parameters (oidcc-display-page, oidcc-ui-locales, ...)", async () => {
      const { params } = await redirected(
        await authorize({ display: "popup", ui_locales: "se", claims_locales: "se", extra_parameter_not_understood: "x" }),
      );
      assert.ok(params.get("code"));
    });
  });

  describe("the claims parameter (OIDC Core 5.5, oidcc-claims-essential)", () => {
    const claimsParam = (value: unknown) => JSON.stringify(value);

    it("claims request puts the asked claims in the id_token", async () => {
      const claims = claimsParam({ id_token: { email: { essential: true }, name: null, "urn:example:unknown": null }, userinfo: { phone_number: null } });
      const { params } = await redirected(await authorize({ scope: "openid", claims }));
      const tokens = (await redeem(params.get("code")!)).body;
      const id = await verify(tokens.id_token, "JWT");
      assert.equal(id.email, TEST_USER.email);
      assert.equal(id.name, TEST_USER.displayName);
      assert.equal(id.phone_number, undefined, "asked at userinfo only");
      assert.equal(id["urn:example:unknown"], undefined);
      assert.equal(id.picture, undefined, "not asked for, and no profile scope");
    });

    it("puts an essential name in an implicit id_token", async () => {
      const { params } = await redirected(
        await authorize({ response_type: "id_token", nonce: "n", scope: "openid", claims: claimsParam({ id_token: { name: { essential: true } } }) }),
      );
      assert.equal(decodeJwt(params.get("id_token")!).name, TEST_USER.displayName);
    });

    it("keeps name out of the id_token when it is asked at userinfo only", async () => {
      const { params } = await redirected(await authorize({ scope: "openid", claims: claimsParam({ userinfo: { name: { essential: true } } }) }));
      const tokens = (await redeem(params.get("code")!)).body;
      assert.equal(decodeJwt(tokens.id_token).name, undefined);
    });

    for (const [what, value] of [
      ["invalid JSON", "{not json"],
      ["a JSON array", "[]"],
      ["an id_token member that is not an object", '{"id_token": "name"}'],
      ["a claim request that is not null or an object", '{"id_token": {"name": true}}'],
      ["a non-boolean essential", '{"id_token": {"name": {"essential": "yes"}}}'],
    ] as const) {
      it(`answers ${what} in claims with invalid_request`, async () => {
        const { params } = await redirected(await browse(authorizeUrl(server.url, { claims: value }), new CookieJar()));
        assert.equal(params.get("error"), "invalid_request");
        assert.equal(params.get("state"), "state-123");
      });
    }
  });
});
