import assert from "node:assert/strict";
import type { RunningServer } from "../../src/app/server.js";
import { SESSION_COOKIE } from "../../src/oauth/sessions.js";
import { browse, CookieJar, signOutFormFields, submit } from "../support/browserless.js";
import { FakeClock } from "../support/clock.js";
import { getJson, passwordTokens } from "../support/oauth.js";
import { startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

/**
 * Issue 41, §6: an ID token as `id_token_hint` vouches for a sign-out only
 * for its own user. Anyone's ID token (an expired one too: a hint may be)
 * sent with another user's browser gets the confirmation page, as no hint
 * would, and that user stays signed in.
 */
describe("sign-out with someone else's ID token", () => {
  const BOB = { name: "bob", password: "pw-bob-123456", displayName: "Bob" };
  const REDIRECT = TEST_APP.redirectUris[0]!;
  const clock = new FakeClock();
  let server: RunningServer;
  /** Bob's ID token, expired by the time the tests use it. */
  let bobsHint: string;
  let alicesHint: string;
  before(async () => {
    server = await startTestServer({ clock, config: { applications: [TEST_APP], users: [TEST_USER, BOB] } });
    bobsHint = (await passwordTokens(server, { user: BOB })).id_token!;
    alicesHint = (await passwordTokens(server)).id_token!;
    clock.advanceSeconds(TEST_APP.expireInHours * 3600 + 1);
  });
  after(() => server.close());

  /** A browser holding a fresh session for alice. */
  async function alicesBrowser(): Promise<{ jar: CookieJar; cookie: string }> {
    const alice = await server.domain.userAdmin.get(TEST_USER.name);
    const value = (await server.domain.sessions.create(alice)).cookie;
    return { jar: new CookieJar().set(SESSION_COOKIE, value), cookie: `${SESSION_COOKIE}=${value}` };
  }
  const signedIn = async (cookie: string) => (await getJson(`${server.url}/api/get-account`, { cookie })).status === 200;
  const logoutUrl = (query: Record<string, string>) => `${server.url}/api/logout?${new URLSearchParams(query)}`;

  it("shows the confirmation page, and keeps alice signed in, for bob's expired ID token as hint (GET and POST)", async () => {
    const { jar, cookie } = await alicesBrowser();
    const asked = [
      await browse(logoutUrl({ id_token_hint: bobsHint }), jar),
      await browse(logoutUrl({ id_token_hint: bobsHint, post_logout_redirect_uri: REDIRECT, state: "s" }), jar),
      await submit(`${server.url}/api/logout`, { id_token_hint: bobsHint, post_logout_redirect_uri: REDIRECT }, jar),
    ];
    for (const res of asked) {
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("content-type"), "text/html; charset=utf-8");
      assert.equal(res.headers.get("set-cookie")?.includes(`${SESSION_COOKIE}=;`) ?? false, false, "the session cookie is kept");
      assert.ok(signOutFormFields(await res.text()).csrf_token);
    }
    assert.equal(await signedIn(cookie), true);
  });

  it("signs alice out on that page's confirmation, to the redirect the hint's client registered", async () => {
    const { jar, cookie } = await alicesBrowser();
    const page = await browse(logoutUrl({ id_token_hint: bobsHint, post_logout_redirect_uri: REDIRECT, state: "s1" }), jar);
    const fields = signOutFormFields(await page.text());
    assert.equal(fields.client_id, TEST_APP.clientId, "the client the hint named travels through the form");
    const res = await submit(`${server.url}/api/logout`, fields, jar);
    assert.equal(res.status, 303);
    assert.equal(res.headers.get("location"), `${REDIRECT}?state=s1`);
    assert.equal(await signedIn(cookie), false);
  });

  it("signs alice out at once with her own ID token as hint, expired or not", async () => {
    const { cookie } = await alicesBrowser();
    const res = await fetch(logoutUrl({ id_token_hint: alicesHint, post_logout_redirect_uri: REDIRECT }), { redirect: "manual", headers: { cookie } });
    assert.equal(res.status, 302);
    assert.equal(res.headers.get("location"), REDIRECT);
    assert.equal(await signedIn(cookie), false);
  });

  it("answers at once when the browser has no live session: there is no one to sign out", async () => {
    const res = await fetch(logoutUrl({ id_token_hint: bobsHint }));
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { status: "ok", msg: "", data: "" });
  });
});
