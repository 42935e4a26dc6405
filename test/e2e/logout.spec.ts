import assert from "node:assert/strict";
import { generateKeyPair, SignJWT } from "jose";
import { SESSION_COOKIE } from "../../src/oauth/sessions.js";
import type { RunningServer } from "../../src/app/server.js";
import { FakeClock } from "../support/clock.js";
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

  it("ends the session and clears the cookie", async () => {
    const cookie = await signIn();
    assert.equal(await signedIn(cookie), true);
    const res = await logout({}, cookie);
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { status: "ok", msg: "", data: "" });
    assert.match(res.headers.get("set-cookie") ?? "", new RegExp(`^${SESSION_COOKIE}=;.*Max-Age=0`));
    assert.equal(await signedIn(cookie), false);
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

  it("accepts an expired ID token as hint", async () => {
    clock.advanceSeconds(TEST_APP.expireInHours * 3600 + 1);
    const res = await logout({ id_token_hint: idToken, post_logout_redirect_uri: REDIRECT }, await signIn());
    assert.equal(res.status, 302);
  });

  it("also takes POST with a form body, and client_id instead of the hint", async () => {
    const cookie = await signIn();
    const res = await fetch(`${server.url}/api/logout`, {
      method: "POST",
      redirect: "manual",
      headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ client_id: TEST_APP.clientId, post_logout_redirect_uri: REDIRECT }).toString(),
    });
    assert.equal(res.status, 302);
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
    assert.deepEqual(doc.revocation_endpoint_auth_methods_supported, ["client_secret_basic", "client_secret_post"]);
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
