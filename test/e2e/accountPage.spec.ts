import assert from "node:assert/strict";
import type { RunningServer } from "../../src/app/server.js";
import { totpCode } from "../../src/oauth/factors/totp.js";
import { authorizeUrl, browse, CookieJar, loginFormFields, submit } from "../support/browserless.js";
import { FakeClock } from "../support/clock.js";
import { enrolTotp } from "../support/factors.js";
import { passwordTokens, postJson, refresh } from "../support/oauth.js";
import { startTestServer, TEST_APP, TEST_PROVIDER, TEST_USER } from "../support/server.js";

const STRICT_APP = { ...TEST_APP, name: "strict", clientId: "client-strict", clientSecret: "secret-strict-of-client-strict", mfa: "required" };
const MAX_FAILURES = 3;

/** The account page (web/account.ts) driven with fetch: sign-in and back, and each action's rules; Chromium drives it in accountPageBrowser.spec.ts. */
describe("account page over HTTP (issue #46 §5)", () => {
  let server: RunningServer;
  const clock = new FakeClock();
  const nextStep = () => clock.advanceSeconds(30);

  before(async () => {
    server = await startTestServer({
      clock,
      config: { applications: [TEST_APP, STRICT_APP], users: [TEST_USER], providers: [TEST_PROVIDER] },
      overrides: { loginMaxFailures: MAX_FAILURES },
    });
  });
  after(() => server?.close());

  async function newUser(name: string, password = `pw-${name}-12345`) {
    await server.domain.userAdmin.create({ name, password } as never);
    return { name, password };
  }

  /** GET /account in a fresh browser: the login form; the password; back at /account. Returns the jar and the page's CSRF token. */
  async function signInToAccount(user: { name: string; password: string }, jar = new CookieJar()) {
    const login = await browse(`${server.url}/account`, jar);
    assert.equal(login.status, 200);
    const html = await login.text();
    assert.match(html, /to continue to <strong>your account<\/strong>/);
    const signedIn = await submit(`${server.url}/login`, { ...loginFormFields(html), username: user.name, password: user.password }, jar);
    assert.equal(signedIn.status, 303, await signedIn.clone().text());
    assert.equal(signedIn.headers.get("location"), "/account");
    return { jar, ...(await page(jar)) };
  }

  async function page(jar: CookieJar) {
    const res = await browse(`${server.url}/account`, jar);
    assert.equal(res.status, 200);
    const html = await res.text();
    return { html, csrf: /name="csrf_token" value="([^"]+)"/.exec(html)![1]! };
  }

  it("sends a browser with no session through the login form and back, then lists its sessions with this one marked", async () => {
    const user = await newUser("olga");
    const other = await signInToAccount(user);
    const { html } = await signInToAccount(user);
    assert.match(html, /Signed in as <strong>olga<\/strong>/);
    assert.equal(html.match(/<li class="current">/g)?.length, 1);
    assert.equal(html.match(/action="\/account\/sessions\/end"/g)?.length, 1, "the other session can be ended, this one is signed out instead");
    assert.ok(other.html.includes("Passkeys") && other.html.includes('href="/account/consents"'));
  });

  it("changes the password: the current one is required, the other session and every refresh token end, this session stays", async () => {
    const user = await newUser("pavel");
    const tokens = await passwordTokens(server, { user });
    assert.ok(tokens.refresh_token, "a refresh token to end");
    const other = await signInToAccount(user);
    const { jar, csrf } = await signInToAccount(user);
    const change = (fields: Record<string, string>) => submit(`${server.url}/account/password`, { csrf_token: csrf, ...fields }, jar);
    const short = await change({ current_password: user.password, password: "short", password_again: "short" });
    assert.equal(short.status, 400);
    assert.match(await short.text(), /at least 8 characters/);
    const wrong = await change({ current_password: "not-it-at-all", password: "pw-pavel-new-1", password_again: "pw-pavel-new-1" });
    assert.match(await wrong.text(), /not your current password/);
    const ok = await change({ current_password: user.password, password: "pw-pavel-new-1", password_again: "pw-pavel-new-1" });
    assert.equal(ok.status, 303);
    assert.match(await (await browse(`${server.url}${ok.headers.get("location")}`, jar)).text(), /Your password is changed/);
    assert.equal((await browse(`${server.url}/account`, other.jar)).status, 200);
    assert.match(await (await browse(`${server.url}/account`, other.jar)).text(), /Sign in/, "the other browser is signed out");
    assert.equal((await refresh(server, tokens.refresh_token!)).status, 400, "the refresh token is revoked");
    await server.store.auditWriter.flush();
    const events = (await server.domain.auditEvents({ event: "password_changed", userName: user.name, pageSize: 100 })).events;
    assert.deepEqual(events.map((e) => e.outcome).sort(), ["failure", "failure", "success"]);
  });

  it("attack: wrong current passwords count as failed sign-ins, and lock the name for the right one too", async () => {
    const user = await newUser("quinn");
    const { jar, csrf } = await signInToAccount(user);
    const change = (current: string) => submit(`${server.url}/account/password`, { csrf_token: csrf, current_password: current, password: "pw-quinn-new-1", password_again: "pw-quinn-new-1" }, jar);
    const guesses = await Promise.all(Array.from({ length: 20 }, (_, i) => change(`guess-${i}`)));
    assert.ok(guesses.every((r) => r.status === 400 || r.status === 429));
    const right = await change(user.password);
    assert.notEqual(right.status, 303, "locked: even the right password is refused");
    assert.match(await right.text(), /too many failed sign-in attempts/i);
  });

  it("attack: every POST without this browser's CSRF token is refused", async () => {
    const user = await newUser("rosa");
    const { jar, csrf } = await signInToAccount(user);
    const other = await signInToAccount(user);
    for (const path of ["/account/password", "/account/totp", "/account/recovery", "/account/factor/remove", "/account/sessions/end", "/account/links/unlink"]) {
      assert.equal((await submit(`${server.url}${path}`, {}, jar)).status, 403, path);
      assert.equal((await submit(`${server.url}${path}`, { csrf_token: other.csrf }, jar)).status, 403, `${path} with another browser's token`);
    }
    assert.equal((await submit(`${server.url}/account/totp`, { csrf_token: csrf }, new CookieJar().set("identity_csrf", csrf))).status, 401, "no session, no account");
  });

  it("ends only the user's own sessions", async () => {
    const mine = await newUser("sven");
    const theirs = await newUser("tara");
    const other = await signInToAccount(theirs);
    const otherHandle = /name="session" value="([^"]+)"/.exec((await signInToAccount(theirs)).html)![1]!;
    const { jar, csrf } = await signInToAccount(mine);
    assert.equal((await submit(`${server.url}/account/sessions/end`, { csrf_token: csrf, session: otherHandle }, jar)).status, 404);
    assert.match((await page(other.jar)).html, /Signed in as/);
  });

  it("unlinks a provider, but never the last way to sign in of a user without a password", async () => {
    const now = clock.now();
    const link = (userId: string, externalId: string) =>
      server.store.federatedIdentities.insert({ provider: TEST_PROVIDER.name, externalIdType: "sub", externalId, userId, username: externalId, createdAt: now, updatedAt: now });
    const user = await newUser("uma");
    const uma = (await server.store.users.findByName(user.name))!;
    await link(uma.id, "uma-at-acme");
    const { jar, csrf } = await signInToAccount(user);
    const unlink = (externalId: string, j = jar, token = csrf) =>
      submit(`${server.url}/account/links/unlink`, { csrf_token: token, provider: TEST_PROVIDER.name, id_type: "sub", external_id: externalId }, j);
    assert.equal((await unlink("uma-at-acme")).status, 303);
    assert.deepEqual(await server.store.federatedIdentities.listByUser(uma.id), []);
    // A user with no password and one link keeps it.
    const victor = await newUser("victor");
    const victorRow = (await server.store.users.findByName(victor.name))!;
    await link(victorRow.id, "victor-at-acme");
    const signedIn = await signInToAccount(victor);
    await server.store.db("users").where({ id: victorRow.id }).update({ password_hash: null });
    const refused = await unlink("victor-at-acme", signedIn.jar, signedIn.csrf);
    assert.equal(refused.status, 409);
    assert.match(await refused.text(), /only way you sign in/);
    assert.equal((await server.store.federatedIdentities.listByUser(victorRow.id)).length, 1);
  });

  it("attack: a session from before a factor removal on the account page no longer satisfies a required application", async () => {
    nextStep();
    const user = await newUser("wren");
    const { secret } = await enrolTotp(server, user.name);
    // Signed in to the required application with the code.
    const jar = new CookieJar();
    const login = await browse(authorizeUrl(server.url, { client_id: STRICT_APP.clientId }), jar);
    const fields = loginFormFields(await login.text());
    await submit(`${server.url}/login`, { ...fields, username: user.name, password: user.password }, jar);
    assert.equal((await submit(`${server.url}/login/factor`, { ...fields, code: totpCode(secret, clock.now()) }, jar)).status, 303);
    // The same browser on its account page: removing the last factor asks first, naming the application.
    const { csrf, html } = await page(jar);
    const factor = /name="factor" value="([^"]+)"/.exec(html)![1]!;
    const asked = await submit(`${server.url}/account/factor/remove`, { csrf_token: csrf, factor }, jar);
    assert.equal(asked.status, 200);
    assert.match(await asked.text(), /Remove your last second factor\?[\s\S]*<li>strict<\/li>/);
    assert.equal((await server.domain.secondFactors.list((await server.store.users.findByName(user.name))!.id)).length, 1, "nothing removed before the confirmation");
    assert.equal((await submit(`${server.url}/account/factor/remove`, { csrf_token: csrf, factor, confirm: "yes" }, jar)).status, 303);
    const after = await browse(authorizeUrl(server.url, { client_id: STRICT_APP.clientId }), jar);
    assert.equal(after.status, 200, "no code: a factor is asked for first");
    assert.match(await after.text(), /Set up two-step verification/);
  });

  it("attack: a session that signed in with a recovery code no longer counts as two factors once the last factor is gone", async () => {
    nextStep();
    const user = await newUser("xena");
    const { recovery } = await enrolTotp(server, user.name);
    const jar = new CookieJar();
    const login = await browse(authorizeUrl(server.url, { client_id: STRICT_APP.clientId }), jar);
    const fields = loginFormFields(await login.text());
    await submit(`${server.url}/login`, { ...fields, username: user.name, password: user.password }, jar);
    assert.equal((await submit(`${server.url}/login/factor`, { ...fields, code: recovery[0]! }, jar)).status, 303);
    const { csrf, html } = await page(jar);
    const factor = /name="factor" value="([^"]+)"/.exec(html)![1]!;
    assert.equal((await submit(`${server.url}/account/factor/remove`, { csrf_token: csrf, factor, confirm: "yes" }, jar)).status, 303);
    assert.match(await (await browse(authorizeUrl(server.url, { client_id: STRICT_APP.clientId }), jar)).text(), /Set up two-step verification/);
  });

  it("asks a user with a factor for it before the account page, and removes a factor without asking when no required application was used", async () => {
    nextStep();
    const user = await newUser("yuri");
    const { secret } = await enrolTotp(server, user.name);
    const jar = new CookieJar();
    const login = await browse(`${server.url}/account`, jar);
    const fields = loginFormFields(await login.text());
    const step = await submit(`${server.url}/login`, { ...fields, username: user.name, password: user.password }, jar);
    assert.match(await step.text(), /Two-step verification/);
    const done = await submit(`${server.url}/login/factor`, { ...fields, code: totpCode(secret, clock.now()) }, jar);
    assert.equal(done.headers.get("location"), "/account");
    const { csrf, html } = await page(jar);
    assert.match(html, /Recovery codes left: <strong>10<\/strong>/);
    const factor = /name="factor" value="([^"]+)"/.exec(html)![1]!;
    assert.equal((await submit(`${server.url}/account/factor/remove`, { csrf_token: csrf, factor }, jar)).status, 303);
    await server.store.auditWriter.flush();
    const events = (await server.domain.auditEvents({ event: "factor_removed", userName: user.name, pageSize: 100 })).events;
    assert.equal(events.length, 1);
    assert.equal(events[0]!.actor.name, user.name);
  });

  it("AccountService.ChangePassword over REST: the user's own token and current password; every session and refresh token end", async () => {
    const user = await newUser("zoe");
    const tokens = await passwordTokens(server, { user });
    const browser = await signInToAccount(user);
    const url = `${server.url}/api/account/change-password`;
    const bearer = { authorization: `Bearer ${tokens.access_token}` };
    const noToken = await postJson(url, { current_password: user.password, new_password: "pw-zoe-new-123" });
    assert.equal(noToken.status, 401);
    const wrong = await postJson(url, { current_password: "nope", new_password: "pw-zoe-new-123" }, bearer);
    assert.deepEqual([wrong.status, wrong.body.error], [400, "invalid_grant"]);
    const weak = await postJson(url, { current_password: user.password, new_password: "zoe" }, bearer);
    assert.deepEqual([weak.status, weak.body.error], [400, "invalid_request"]);
    assert.match(weak.body.error_description, /at least 8 characters/);
    const ok = await postJson(url, { current_password: user.password, new_password: "pw-zoe-new-123" }, bearer);
    assert.equal(ok.status, 200, ok.text);
    assert.match(await (await browse(`${server.url}/account`, browser.jar)).text(), /Sign in/, "the browser session ended");
    assert.equal((await refresh(server, tokens.refresh_token!)).status, 400);
    assert.equal((await passwordTokens(server, { user: { name: user.name, password: "pw-zoe-new-123" } })).token_type, "Bearer");
  });
});
