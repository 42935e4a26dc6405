import assert from "node:assert/strict";
import type { RunningServer } from "../../src/app/server.js";
import type { AuditEvent } from "../../src/shared/audit.js";
import { authorizeUrl, browse, CookieJar, loginFormFields, signIn, submit } from "../support/browserless.js";
import { askReset, followLink, linkHref, signUp } from "../support/selfService.js";
import { ADMIN_TOKEN, postForm, RecordingLogger, startTestServer, TEST_APP, TEST_USER, basicAuth } from "../support/server.js";
import { linkIn, TestSmtpServer } from "../support/smtp.js";

const FROM = "Identity <no-reply@identity.test>";
const SIGNUP_APP = { ...TEST_APP, signup: true };
const PLAIN_APP = { ...TEST_APP, name: "plain", clientId: "client-plain" };

/** Every audit event of one kind, once the queue has written them. */
async function auditEvents(server: RunningServer, event: string): Promise<AuditEvent[]> {
  await server.store.auditWriter.flush();
  return (await server.domain.auditEvents({ event, pageSize: 100 })).events;
}

describe("self-service accounts (issue 47)", function () {
  this.timeout(120_000);
  let smtp: TestSmtpServer;
  let server: RunningServer;
  let logger: RecordingLogger;

  before(async () => {
    smtp = await new TestSmtpServer().start();
    logger = new RecordingLogger();
    server = await startTestServer({
      config: { applications: [SIGNUP_APP, PLAIN_APP], users: [TEST_USER] },
      overrides: { smtpUrl: smtp.url, mailFrom: FROM, signupMaxPerHour: 1000 },
      logger,
    });
  });
  after(async () => {
    await server?.close();
    await smtp?.close();
  });

  describe("§2 sign-up", () => {
    it("offers Create account only where the application says signup, and Forgot password? with mail", async () => {
      const page = await (await browse(authorizeUrl(server.url), new CookieJar())).text();
      assert.ok(linkHref(page, "Create account")?.startsWith("/signup?request="));
      assert.ok(linkHref(page, "Forgot password\\?")?.startsWith("/login/forgot?request="));
      const jar = new CookieJar();
      const other = await (await browse(authorizeUrl(server.url, { client_id: PLAIN_APP.clientId }), jar)).text();
      assert.equal(linkHref(other, "Create account"), undefined);
      const { request } = loginFormFields(other);
      assert.equal((await browse(`${server.url}/signup?request=${request}`, jar)).status, 404);
    });

    it("signs up, waits for the verification mail, then goes on to the redirect_uri with the original state", async () => {
      const jar = new CookieJar();
      const account = { username: "newcomer", email: "newcomer@example.com", password: "a-good-passphrase" };
      const res = await signUp(server, jar, account, { state: "original-state-42" });
      assert.equal(res.status, 200);
      assert.match(await res.text(), /Check your email/);

      // Before verification the account cannot sign in, even with the right password.
      const early = await browse(authorizeUrl(server.url), jar);
      const refused = await submit(`${server.url}/login`, { ...loginFormFields(await early.text()), username: account.username, password: account.password }, jar);
      assert.equal(refused.status, 400);
      assert.match(await refused.text(), /verify your email address first/i);

      const mail = await smtp.waitFor(account.email, /Verify your email/);
      assert.deepEqual(mail.parsed.from?.value.map((a) => [a.name, a.address]), [["Identity", "no-reply@identity.test"]]);
      const link = linkIn(mail, `${server.issuer}/email/verify?token=`);
      assert.ok(mail.html.includes(link.replace(/&/g, "&amp;")), "the HTML part carries the same link");
      const token = new URL(link).searchParams.get("token")!;
      assert.ok(Buffer.from(token, "base64url").length >= 16, "at least 128 bits");

      const landing = await followLink(link, jar);
      assert.equal(landing.status, 200, "the verification goes on to the sign-in the sign-up began with");
      const login = await landing.text();
      const signedIn = await submit(`${server.url}/login`, { ...loginFormFields(login), username: account.username, password: account.password }, jar);
      assert.equal(signedIn.status, 303);
      const back = new URL(signedIn.headers.get("location")!);
      assert.equal(`${back.origin}${back.pathname}`, TEST_APP.redirectUris[0]);
      assert.equal(back.searchParams.get("state"), "original-state-42");
      assert.ok(back.searchParams.get("code"));
      assert.equal((await server.store.users.findByName(account.username))!.emailVerified, true);
      const [signup] = await auditEvents(server, "signup");
      assert.ok(signup);
      assert.ok((await auditEvents(server, "email_verified")).some((e) => e.userName === account.username));
    });

    it("labels each field and gives each its own error", async () => {
      const res = await signUp(server, new CookieJar(), { username: "bad name!", email: "no-at-sign", password: "short", passwordAgain: "other" });
      assert.equal(res.status, 400);
      const html = await res.text();
      for (const field of ["username", "email", "password", "password_again"]) {
        assert.match(html, new RegExp(`<label for="${field}">`));
        assert.match(html, new RegExp(`id="${field}-error"`), `${field} has its own error`);
      }
      assert.match(html, /needs an @/);
      assert.match(html, /at least 8 characters/);
      assert.match(html, /two passwords differ/);
    });

    it("refuses a password equal to the user name or the email", async () => {
      const byName = await (await signUp(server, new CookieJar(), { username: "samename1", email: "samename1@example.com", password: "samename1" })).text();
      assert.match(byName, /must not be your user name/);
      const byEmail = await (await signUp(server, new CookieJar(), { username: "samemail1", email: "samemail1@example.com", password: "SameMail1@example.com" })).text();
      assert.match(byEmail, /must not be your email address/);
      assert.equal(await server.store.users.findByName("samename1"), undefined);
    });

    it("says plainly that a user name is taken", async () => {
      const res = await signUp(server, new CookieJar(), { username: TEST_USER.name, email: "someone-else@example.com", password: "a-good-passphrase" });
      assert.equal(res.status, 400);
      assert.match(await res.text(), /This user name is taken/);
    });

    it("does not reveal a taken email: the same page, no account, and a mail to its owner", async () => {
      const fresh = await signUp(server, new CookieJar(), { username: "fresh-one", email: "fresh-one@example.com", password: "a-good-passphrase" });
      const taken = await signUp(server, new CookieJar(), { username: "squatter", email: TEST_USER.email.toUpperCase(), password: "a-good-passphrase" });
      assert.equal(taken.status, fresh.status);
      assert.equal(await taken.text(), await fresh.text());
      assert.equal(await server.store.users.findByName("squatter"), undefined);
      const warning = await smtp.waitFor(TEST_USER.email, /Someone tried to create an account/);
      assert.ok(linkIn(warning, `${server.issuer}/login/forgot`));
    });

    it("lets existing users sign in as before", async () => {
      const { location } = await signIn(server);
      assert.ok(location.searchParams.get("code"));
    });
  });

  describe("§3 password reset", () => {
    const user = { name: "resetter", password: "old-password-1", email: "resetter@example.com" };
    before(async () => {
      await server.domain.userAdmin.create({ name: user.name, password: user.password, email: user.email });
    });

    it("answers the same for an account and for nobody, mails the account, and the new password ends every sign-in", async () => {
      const token = await postForm(`${server.url}/api/login/oauth/access_token`, { grant_type: "password", username: user.name, password: user.password, scope: "openid offline_access" }, { authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret) });
      assert.equal(token.status, 200);
      const { jar: signedIn } = await signIn(server, {}, { username: user.name, password: user.password });

      const forAccount = await askReset(server, new CookieJar(), user.name);
      const forNobody = await askReset(server, new CookieJar(), "nobody-at-all");
      assert.equal(forAccount.status, 200);
      assert.equal(forNobody.status, 200);
      assert.equal(await forAccount.text(), await forNobody.text());

      const mail = await smtp.waitFor(user.email, /Reset your password/);
      const link = linkIn(mail, `${server.issuer}/password/reset?token=`);
      const done = await followLink(link, new CookieJar(), { password: "brand-new-password", password_again: "brand-new-password" });
      assert.equal(done.status, 200);
      assert.match(await done.text(), /Password changed/);

      const refresh = await postForm(`${server.url}/api/login/oauth/refresh_token`, { grant_type: "refresh_token", refresh_token: token.body.refresh_token }, { authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret) });
      assert.equal(refresh.status, 400, "the refresh token is revoked");
      const again = await browse(authorizeUrl(server.url), signedIn);
      assert.equal(again.status, 200, "the session is over: the login form again");
      await assert.rejects(signIn(server, {}, { username: user.name, password: user.password }));
      await signIn(server, {}, { username: user.name, password: "brand-new-password" });
      await smtp.waitFor(user.email, /Your password was changed/);
      assert.ok((await auditEvents(server, "password_reset")).some((e) => e.userName === user.name));
    });

    it("finds the account by email too, and clears its lockout", async () => {
      const locked = { name: "locked-out", password: "old-password-2", email: "locked-out@example.com" };
      await server.domain.userAdmin.create({ ...locked });
      for (let i = 0; i < 5; i++) await signIn(server, {}, { username: locked.name, password: "wrong-guess" }).catch(() => {});
      await assert.rejects(signIn(server, {}, { username: locked.name, password: locked.password }), "locked");
      await askReset(server, new CookieJar(), locked.email);
      const link = linkIn(await smtp.waitFor(locked.email, /Reset your password/), `${server.issuer}/password/reset?token=`);
      assert.equal((await followLink(link, new CookieJar(), { password: "a-new-password-2", password_again: "a-new-password-2" })).status, 200);
      await signIn(server, {}, { username: locked.name, password: "a-new-password-2" });
    });
  });

  describe("§4 verification mail sent by an admin", () => {
    it("sends it by RPC; a change of email makes it unverified again", async () => {
      await server.domain.userAdmin.create({ name: "admin-verified", email: "first@example.com", emailVerified: true });
      const changed = await server.domain.userAdmin.update({ name: "admin-verified", email: "second@example.com" });
      assert.equal(changed.emailVerified, false);
      const res = await fetch(`${server.url}/identity.v1.UserAdminService/SendVerificationEmail`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${ADMIN_TOKEN}` },
        body: JSON.stringify({ name: "admin-verified" }),
      });
      assert.equal(res.status, 200, await res.text());
      const link = linkIn(await smtp.waitFor("second@example.com", /Verify your email/), `${server.issuer}/email/verify?token=`);
      const done = await followLink(link, new CookieJar());
      assert.equal(done.status, 200);
      assert.match(await done.text(), /Email verified/);
      assert.equal((await server.store.users.findByName("admin-verified"))!.emailVerified, true);
    });
  });

  describe("§1 mail", () => {
    it("never writes the SMTP password to the log", () => {
      assert.ok(!logger.text().includes(smtp.password));
    });
  });
});

describe("self-service without mail (issue 47 §1)", () => {
  const MFA_APP = { ...SIGNUP_APP, name: "mfa-signup", clientId: "client-mfa-signup", mfa: "required" };
  let server: RunningServer;
  before(async () => {
    server = await startTestServer({ config: { applications: [SIGNUP_APP, MFA_APP], users: [TEST_USER] } });
  });
  after(() => server?.close());

  it("offers no reset and no verification step: sign-up signs in at once", async () => {
    const jar = new CookieJar();
    const page = await (await browse(authorizeUrl(server.url), jar)).text();
    assert.equal(linkHref(page, "Forgot password\\?"), undefined);
    assert.equal((await browse(`${server.url}/login/forgot`, jar)).status, 404);
    const res = await signUp(server, jar, { username: "nomail", email: "nomail@example.com", password: "a-good-passphrase" }, { state: "s-1" });
    assert.equal(res.status, 303);
    const back = new URL(res.headers.get("location")!);
    assert.equal(back.searchParams.get("state"), "s-1");
    assert.ok(back.searchParams.get("code"));
    const user = await server.store.users.findByName("nomail");
    assert.equal(user!.mustVerifyEmail, undefined);
    assert.equal(user!.emailVerified, false);
    const rpc = await fetch(`${server.url}/identity.v1.UserAdminService/SendVerificationEmail`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${ADMIN_TOKEN}` },
      body: JSON.stringify({ name: "nomail" }),
    });
    assert.equal(rpc.status, 400);
    assert.match(await rpc.text(), /mail is not configured/);
  });

  it("attack: a new account gets no code from an application that requires a second factor; it enrols one first (issue 46 §4)", async () => {
    const jar = new CookieJar();
    const res = await signUp(server, jar, { username: "nofactor", email: "nofactor@example.com", password: "a-good-passphrase" }, { client_id: MFA_APP.clientId, state: "s-2" });
    const location = res.headers.get("location") ?? "";
    assert.doesNotMatch(location, /[?&#]code=/, "a code before any second factor");
    assert.match(`${location} ${await res.text()}`, /enrol/i);
  });
});
