import assert from "node:assert/strict";
import { request } from "node:http";
import type { RunningServer } from "../../src/app/server.js";
import { CookieJar } from "../support/browserless.js";
import { FakeClock } from "../support/clock.js";
import { askReset, browse, followLink, hiddenFields, openSignUp, signUp, submit } from "../support/selfService.js";
import { startTestServer, TEST_APP, TEST_USER } from "../support/server.js";
import { linkIn, TestSmtpServer } from "../support/smtp.js";

const SIGNUP_APP = { ...TEST_APP, signup: true };
const FROM = "no-reply@identity.test";
let nextAddress = 1;
/** A client address of its own, as a trusted proxy names it, so per-address budgets do not mix tests. */
const fromNewAddress = () => ({ "x-forwarded-for": `203.0.113.${nextAddress++}` });

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** Issue 47 §5: the medians of 15 requests of each kind differ by at most 40 ms or 30%, whichever is larger. */
function assertSameTime(a: number[], b: number[], what: string): void {
  const [ma, mb] = [median(a), median(b)];
  const allowed = Math.max(40, 0.3 * Math.max(ma, mb));
  assert.ok(Math.abs(ma - mb) <= allowed, `${what}: medians ${ma.toFixed(1)} ms and ${mb.toFixed(1)} ms differ by more than ${allowed.toFixed(1)} ms`);
}

async function timed(run: () => Promise<Response>): Promise<{ ms: number; status: number; text: string }> {
  const started = performance.now();
  const res = await run();
  const text = await res.text();
  return { ms: performance.now() - started, status: res.status, text };
}

describe("self-service attacks (issue 47 §5)", function () {
  this.timeout(180_000);
  let smtp: TestSmtpServer;
  let server: RunningServer;

  before(async () => {
    smtp = await new TestSmtpServer().start();
    server = await startTestServer({
      config: { applications: [SIGNUP_APP], users: [TEST_USER, { name: "bob", password: "bob-password-1", email: "bob@example.com" }] },
      overrides: { smtpUrl: smtp.url, mailFrom: FROM, signupMaxPerHour: 3, trustedProxies: ["127.0.0.1"] },
    });
  });
  after(async () => {
    await server?.close();
    await smtp?.close();
  });

  const resetLinkFor = async (identifier: string, email: string): Promise<string> => {
    const before = smtp.to(email).length;
    assert.equal((await askReset(server, new CookieJar(), identifier, fromNewAddress())).status, 200);
    await server.domain.selfService.drain();
    const mails = smtp.to(email).filter((m) => /Reset your password/.test(m.subject));
    assert.ok(mails.length > before || smtp.to(email).length > before, "a reset mail came");
    return linkIn(smtp.to(email).at(-1)!, `${server.issuer}/password/reset?token=`);
  };

  it("account enumeration by reset: the same answer and the same time for an account and for nobody", async () => {
    const jar = new CookieJar();
    const page = await browse(`${server.url}/login/forgot`, jar);
    const hidden = hiddenFields(await page.text());
    const existing: number[] = [];
    const missing: number[] = [];
    const answers = new Set<string>();
    for (let i = 0; i < 15; i++) {
      for (const [identifier, times] of [[TEST_USER.name, existing], [`nobody-${i}`, missing]] as const) {
        const res = await timed(() => submit(`${server.url}/login/forgot`, { ...hidden, identifier }, jar, fromNewAddress()));
        assert.equal(res.status, 200);
        answers.add(res.text);
        times.push(res.ms);
        await server.domain.selfService.drain();
      }
    }
    assert.equal(answers.size, 1, "one answer for both");
    assertSameTime(existing, missing, "reset for an account and for nobody");
  });

  it("account enumeration by reset with a slow database: the account is looked up after the answer", async () => {
    const users = server.store.users;
    const [findByName, findByEmail] = [users.findByName, users.findByEmail];
    const slow = <A extends unknown[], R>(fn: (...a: A) => Promise<R>) => async (...a: A) => {
      await new Promise((wake) => setTimeout(wake, 400));
      return fn.apply(users, a);
    };
    users.findByName = slow(findByName);
    users.findByEmail = slow(findByEmail);
    try {
      for (const identifier of [TEST_USER.email, "nobody@example.com"]) {
        const res = await timed(() => askReset(server, new CookieJar(), identifier, fromNewAddress()));
        assert.equal(res.status, 200);
        assert.ok(res.ms < 400, `answered in ${res.ms.toFixed(0)} ms: the lookup was on the request's path`);
      }
    } finally {
      await server.domain.selfService.drain();
      users.findByName = findByName;
      users.findByEmail = findByEmail;
    }
  });

  it("account enumeration by sign-up: the same answer and the same time for a new email and a taken one", async () => {
    const fresh: number[] = [];
    const taken: number[] = [];
    const answers = new Set<string>();
    for (let i = 0; i < 15; i++) {
      for (const [email, times] of [[`fresh-${i}@example.com`, fresh], [TEST_USER.email, taken]] as const) {
        const jar = new CookieJar();
        const hidden = await openSignUp(server, jar);
        const fields = { ...hidden, username: `enum-${times === fresh ? "f" : "t"}-${i}`, email, password: "a-good-passphrase", password_again: "a-good-passphrase" };
        const res = await timed(() => submit(`${server.url}/signup`, fields, jar, fromNewAddress()));
        assert.equal(res.status, 200, res.text);
        answers.add(res.text);
        times.push(res.ms);
        await server.domain.selfService.drain();
      }
    }
    assert.equal(answers.size, 1, "one answer for both");
    assertSameTime(fresh, taken, "sign-up with a new email and a taken one");
  });

  it("a reset link works once: used twice, the second changes nothing", async () => {
    const link = await resetLinkFor("bob", "bob@example.com");
    assert.equal((await followLink(link, new CookieJar(), { password: "bob-password-2", password_again: "bob-password-2" })).status, 200);
    const again = await followLink(link, new CookieJar(), { password: "attacker-pass-9", password_again: "attacker-pass-9" });
    assert.equal(again.status, 400);
    assert.match(await again.text(), /already used/);
    const user = await server.store.users.findByName("bob");
    assert.ok(user);
    await assert.rejects(server.domain.users.authenticate("bob", "attacker-pass-9"));
    await server.domain.users.authenticate("bob", "bob-password-2");
  });

  it("a verification link works once, and never signs anyone in", async () => {
    const jar = new CookieJar();
    assert.equal((await signUp(server, jar, { username: "once-verified", email: "once@example.com", password: "a-good-passphrase" }, {}, fromNewAddress())).status, 200);
    await server.domain.selfService.drain();
    const link = linkIn(await smtp.waitFor("once@example.com", /Verify/), `${server.issuer}/email/verify?token=`);
    const first = await followLink(link, new CookieJar());
    assert.equal(first.status, 200);
    assert.ok(!first.headers.getSetCookie().some((c) => c.startsWith("identity_session=")), "no session from a link");
    const second = await followLink(link, new CookieJar());
    assert.equal(second.status, 400);
    assert.match(await second.text(), /already used/);
  });

  it("a link for another purpose or a made-up token does nothing; a link changes only its own user", async () => {
    const link = await resetLinkFor("bob", "bob@example.com");
    const token = new URL(link).searchParams.get("token")!;
    const asVerify = await browse(`${server.issuer}/email/verify?token=${token}`, new CookieJar());
    assert.equal(asVerify.status, 400, "a reset token is no verification token");
    for (const made of ["", "x", token.slice(0, -1) + (token.endsWith("A") ? "B" : "A")]) {
      assert.equal((await browse(`${server.issuer}/password/reset?token=${made}`, new CookieJar())).status, 400);
    }
    // Alice is signed in on this browser; Bob's link changes Bob's password, not hers.
    const jar = new CookieJar();
    const done = await followLink(link, jar, { password: "bob-password-3", password_again: "bob-password-3" });
    assert.equal(done.status, 200);
    await server.domain.users.authenticate(TEST_USER.name, TEST_USER.password);
    await server.domain.users.authenticate("bob", "bob-password-3");
  });

  it("a reset link still works after a newer one was sent: no, the older is void", async () => {
    const older = await resetLinkFor("bob", "bob@example.com");
    const newer = await resetLinkFor("bob@example.com", "bob@example.com");
    assert.notEqual(older, newer);
    const stale = await followLink(older, new CookieJar(), { password: "stale-pass-123", password_again: "stale-pass-123" });
    assert.equal(stale.status, 400);
    assert.match(await stale.text(), /replaced by a newer one/);
    assert.equal((await followLink(newer, new CookieJar(), { password: "bob-password-4", password_again: "bob-password-4" })).status, 200);
  });

  it("a link made with a Host header other than the issuer still points at the issuer", async () => {
    const raw = (method: string, path: string, headers: Record<string, string>, body = "") =>
      new Promise<{ status: number; cookie: string[]; text: string }>((resolve, reject) => {
        const req = request(`${server.url}${path}`, { method, headers: { host: "evil.example", ...headers } }, (res) => {
          let text = "";
          res.on("data", (d: Buffer) => (text += d));
          res.on("end", () => resolve({ status: res.statusCode!, cookie: res.headers["set-cookie"] ?? [], text }));
        });
        req.on("error", reject);
        req.end(body);
      });
    // A user of its own: the timing test above spent Alice's hourly budget of reset mails.
    await server.domain.userAdmin.create({ name: "hosted", email: "hosted@example.com" });
    const page = await raw("GET", "/login/forgot", {});
    const cookie = page.cookie.map((c) => c.split(";")[0]).join("; ");
    const body = new URLSearchParams({ ...hiddenFields(page.text), identifier: "hosted" }).toString();
    const asked = await raw("POST", "/login/forgot", { cookie, "content-type": "application/x-www-form-urlencoded", "x-forwarded-host": "evil.example" }, body);
    assert.equal(asked.status, 200);
    await server.domain.selfService.drain();
    const mail = smtp.to("hosted@example.com").find((m) => /Reset/.test(m.subject))!;
    assert.ok(mail, "a reset mail came");
    assert.ok(!mail.text.includes("evil.example") && !mail.html.includes("evil.example"));
    assert.ok(linkIn(mail, `${server.issuer}/password/reset?token=`));
  });

  it("sign-up flooding: every request from an address counts, and those beyond the limit get 429", async () => {
    const address = fromNewAddress();
    const results: number[] = [];
    for (let i = 0; i < 5; i++) {
      const account = i === 0 ? { username: "bad name", email: "x", password: "x" } : { username: `flood-${i}`, email: `flood-${i}@example.com`, password: "a-good-passphrase" };
      results.push((await signUp(server, new CookieJar(), account, {}, address)).status);
    }
    assert.deepEqual(results, [400, 200, 200, 429, 429]);
    assert.equal(await server.store.users.findByName("flood-3"), undefined);
    assert.equal((await signUp(server, new CookieJar(), { username: "flood-other", email: "flood-other@example.com", password: "a-good-passphrase" }, {}, fromNewAddress())).status, 200, "another address is not held back");
  });

  it("reset flooding: 5 mails an hour per account, and 429 beyond 20 requests an hour per address", async () => {
    await server.domain.userAdmin.create({ name: "flooded", email: "flooded@example.com" });
    for (let i = 0; i < 7; i++) assert.equal((await askReset(server, new CookieJar(), "flooded", fromNewAddress())).status, 200);
    await server.domain.selfService.drain();
    assert.equal(smtp.to("flooded@example.com").length, 5);
    const address = fromNewAddress();
    const statuses: number[] = [];
    for (let i = 0; i < 21; i++) statuses.push((await askReset(server, new CookieJar(), `nobody-${i}`, address)).status);
    assert.deepEqual(statuses, [...Array(20).fill(200), 429]);
  });

  it("a weak password is refused at sign-up and at reset, and the refused reset keeps its link", async () => {
    for (const password of ["short12", "weak-user", "weak-user@example.com"]) {
      const res = await signUp(server, new CookieJar(), { username: "weak-user", email: "weak-user@example.com", password }, {}, fromNewAddress());
      assert.equal(res.status, 400, password);
    }
    assert.equal(await server.store.users.findByName("weak-user"), undefined);
    const link = await resetLinkFor("bob", "bob@example.com");
    for (const password of ["short12", "bob", "BOB@example.com"]) {
      const res = await followLink(link, new CookieJar(), { password, password_again: password });
      assert.equal(res.status, 400, password);
      assert.match(await res.text(), /must/);
    }
    assert.equal((await followLink(link, new CookieJar(), { password: "bob-password-5", password_again: "bob-password-5" })).status, 200);
  });
});

describe("self-service links expire (issue 47 §5)", function () {
  this.timeout(120_000);
  it("an expired reset or verification link shows a page that says so, and changes nothing", async () => {
    const smtp = await new TestSmtpServer().start();
    const clock = new FakeClock();
    const server = await startTestServer({ clock, config: { applications: [SIGNUP_APP], users: [TEST_USER] }, overrides: { smtpUrl: smtp.url, mailFrom: FROM, emailLinkTtlSeconds: 60 } });
    try {
      await askReset(server, new CookieJar(), TEST_USER.name);
      await signUp(server, new CookieJar(), { username: "late", email: "late@example.com", password: "a-good-passphrase" });
      await server.domain.selfService.drain();
      const reset = linkIn(await smtp.waitFor(TEST_USER.email, /Reset/), `${server.issuer}/password/reset?token=`);
      const verify = linkIn(await smtp.waitFor("late@example.com", /Verify/), `${server.issuer}/email/verify?token=`);
      const jar = new CookieJar();
      const form = hiddenFields(await (await browse(reset, jar)).text());
      clock.advanceSeconds(60);
      for (const link of [reset, verify]) {
        const page = await browse(link, new CookieJar());
        assert.equal(page.status, 400);
        assert.match(await page.text(), /expired/);
      }
      const posted = await submit(`${server.issuer}/password/reset`, { ...form, password: "too-late-pass", password_again: "too-late-pass" }, jar);
      assert.equal(posted.status, 400);
      await server.domain.users.authenticate(TEST_USER.name, TEST_USER.password);
      assert.equal((await server.store.users.findByName("late"))!.emailVerified, false);
    } finally {
      await server.close();
      await smtp.close();
    }
  });
});
