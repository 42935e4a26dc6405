import assert from "node:assert/strict";
import type { RunningServer } from "../../src/app/server.js";
import { totpCode } from "../../src/oauth/factors/totp.js";
import { authorizeUrl, browse, CookieJar, loginFormFields, submit } from "../support/browserless.js";
import { FakeClock } from "../support/clock.js";
import { elementText, enrolTotp, redeem } from "../support/factors.js";
import { basicAuth, postForm, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

const STRICT_APP = { ...TEST_APP, name: "strict", clientId: "client-strict", clientSecret: "secret-strict-of-client-strict", mfa: "required" };
const BOB = { name: "bob", password: "pw-bob-12345" };
const CAROL = { name: "carol", password: "pw-carol-12345" };

/** The second step of browser sign-in (web/factorStep.ts), driven with fetch; Chromium drives it in secondFactorBrowser.spec.ts. */
describe("second factor at sign-in (issue #46)", () => {
  let server: RunningServer;
  const clock = new FakeClock();

  before(async () => {
    server = await startTestServer({ clock, config: { applications: [TEST_APP, STRICT_APP], users: [TEST_USER, BOB, CAROL] } });
  });
  after(() => server?.close());

  /** Password step: the page that follows it. */
  async function password(user: { name: string; password: string }, params: Record<string, string> = {}, jar = new CookieJar()) {
    const page = await browse(authorizeUrl(server.url, params), jar);
    assert.equal(page.status, 200);
    const fields = loginFormFields(await page.text());
    const res = await submit(`${server.url}/login`, { ...fields, username: user.name, password: user.password }, jar);
    return { res, fields, jar };
  }

  const nextStep = () => clock.advanceSeconds(30);

  it("password alone: acr pwd, amr [pwd], and auth_time in the ID token, introspection and userinfo", async () => {
    const { res } = await password(CAROL);
    assert.equal(res.status, 303);
    const { tokens, idToken } = await redeem(server, new URL(res.headers.get("location")!));
    assert.equal(idToken.acr, "pwd");
    assert.deepEqual(idToken.amr, ["pwd"]);
    assert.equal(typeof idToken.auth_time, "number");
    const introspected = await postForm(`${server.url}/api/login/oauth/introspect`, { token: tokens.access_token }, { authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret) });
    assert.deepEqual([introspected.body.acr, introspected.body.amr, introspected.body.auth_time], ["pwd", ["pwd"], idToken.auth_time]);
    const userinfo = await fetch(`${server.url}/api/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token}` } }).then((r) => r.json() as Promise<Record<string, unknown>>);
    assert.deepEqual([userinfo.acr, userinfo.amr], ["pwd", ["pwd"]]);
  });

  it("password and code: the factor page, then acr mfa and amr [pwd, otp, mfa]", async () => {
    const { secret } = await enrolTotp(server, TEST_USER.name);
    const { res, fields, jar } = await password(TEST_USER);
    assert.equal(res.status, 200);
    assert.match(await res.text(), /action="\/login\/factor"/);
    const wrong = await submit(`${server.url}/login/factor`, { ...fields, code: "000000" }, jar);
    assert.equal(wrong.status, 400);
    assert.equal(wrong.headers.get("location"), null);
    const ok = await submit(`${server.url}/login/factor`, { ...fields, code: totpCode(secret, clock.now()) }, jar);
    assert.equal(ok.status, 303);
    const { idToken } = await redeem(server, new URL(ok.headers.get("location")!));
    assert.equal(idToken.acr, "mfa");
    assert.deepEqual(idToken.amr, ["pwd", "otp", "mfa"]);
  });

  it("attack: skipping the second step by going straight to code issuance issues no code", async () => {
    await enrolTotp(server, BOB.name);
    const { res, fields, jar } = await password(BOB);
    assert.equal(res.status, 200);
    // The continue step of an enrolment, without any factor.
    const skip = await submit(`${server.url}/login/factor/continue`, fields, jar);
    assert.equal(skip.status, 403);
    assert.equal(skip.headers.get("location"), null);
    // The authorize endpoint again: no session was made by the password alone.
    const again = await browse(authorizeUrl(server.url), jar);
    assert.equal(again.status, 200);
    assert.match(await again.text(), /action="\/login"/);
    // An empty code, and another request's form.
    assert.equal((await submit(`${server.url}/login/factor`, { ...fields, code: "" }, jar)).status, 400);
    const fresh = loginFormFields(await (await browse(authorizeUrl(server.url), jar)).text());
    assert.equal((await submit(`${server.url}/login/factor`, { ...fresh, code: "123456" }, jar)).status, 403);
  });

  it("attack: a recovery code signs in once; reused, it is refused", async () => {
    nextStep();
    const { recovery } = await enrolTotp(server, CAROL.name);
    const first = await password(CAROL);
    const ok = await submit(`${server.url}/login/factor`, { ...first.fields, code: recovery[0]! }, first.jar);
    assert.equal(ok.status, 303);
    const { idToken } = await redeem(server, new URL(ok.headers.get("location")!));
    assert.equal(idToken.acr, "mfa");
    const second = await password(CAROL);
    const reused = await submit(`${server.url}/login/factor`, { ...second.fields, code: recovery[0]! }, second.jar);
    assert.equal(reused.status, 400);
    const list = await server.domain.secondFactors.recoveryCodesLeft((await server.store.users.findByName(CAROL.name))!.id);
    assert.equal(list, 9);
  });

  it("refuses the password grant for a user with a factor: invalid_grant saying a second factor is required", async () => {
    const res = await postForm(`${server.url}/api/login/oauth/access_token`, { grant_type: "password", username: TEST_USER.name, password: TEST_USER.password }, { authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret) });
    assert.equal(res.status, 400);
    assert.equal(res.body.error, "invalid_grant");
    assert.match(res.body.error_description, /second factor is required/);
  });

  it("mfa required: a user without a factor enrols during sign-in, sees recovery codes once, and only then gets a code", async () => {
    const user = { name: "dave", password: "pw-dave-12345" };
    await server.domain.userAdmin.create({ name: user.name, password: user.password } as never);
    const { res, fields, jar } = await password(user, { client_id: STRICT_APP.clientId });
    assert.equal(res.status, 200);
    const page = await res.text();
    assert.match(page, /<img class="qr" src="data:image\/png;base64,/);
    const secret = elementText(page, "totp-secret");
    const uri = new URL(elementText(page, "totp-uri"));
    assert.equal(uri.searchParams.get("secret"), secret);
    assert.equal(uri.searchParams.get("issuer"), new URL(server.url).hostname);
    const factor = /name="factor" value="([^"]+)"/.exec(page)![1]!;
    const wrong = await submit(`${server.url}/login/factor/enrol`, { ...fields, factor, code: "000000" }, jar);
    assert.equal(wrong.status, 400);
    const enrolled = await submit(`${server.url}/login/factor/enrol`, { ...fields, factor, code: totpCode(secret, clock.now()) }, jar);
    assert.equal(enrolled.status, 200);
    const codes = [...(await enrolled.text()).matchAll(/<li>([A-Z0-9-]{14})<\/li>/g)].map((m) => m[1]);
    assert.equal(codes.length, 10);
    const done = await submit(`${server.url}/login/factor/continue`, fields, jar);
    assert.equal(done.status, 303);
    const { idToken } = await redeem(server, new URL(done.headers.get("location")!), STRICT_APP);
    assert.deepEqual([idToken.acr, idToken.amr], ["mfa", ["pwd", "otp", "mfa"]]);
    // The session now answers the strict application at once.
    const again = await browse(authorizeUrl(server.url, { client_id: STRICT_APP.clientId }), jar);
    assert.equal(again.status, 303);
  });

  it("attack: a session from before a factor removal no longer satisfies a required application", async () => {
    const user = { name: "erin", password: "pw-erin-12345" };
    await server.domain.userAdmin.create({ name: user.name, password: user.password } as never);
    nextStep();
    const { secret } = await enrolTotp(server, user.name);
    const { fields, jar } = await password(user, { client_id: STRICT_APP.clientId });
    const ok = await submit(`${server.url}/login/factor`, { ...fields, code: totpCode(secret, clock.now()) }, jar);
    assert.equal(ok.status, 303);
    const erin = (await server.store.users.findByName(user.name))!;
    const [factor] = await server.domain.secondFactors.list(erin.id);
    assert.ok(await server.domain.secondFactors.remove(erin, factor!.id));
    const after = await browse(authorizeUrl(server.url, { client_id: STRICT_APP.clientId }), jar);
    assert.equal(after.status, 200, "no code: the factor is asked for first");
    assert.match(await after.text(), /Set up two-step verification/);
    // An optional application still takes the password part of the session.
    assert.equal((await browse(authorizeUrl(server.url), jar)).status, 303);
  });

  it("step-up: acr_values=mfa asks a signed-in user for a factor, and prompt=none gets interaction_required", async () => {
    nextStep();
    const user = { name: "frank", password: "pw-frank-12345" };
    await server.domain.userAdmin.create({ name: user.name, password: user.password } as never);
    const { res, jar } = await password(user);
    assert.equal(res.status, 303, "no factor, optional application: the password is enough");
    const none = await browse(authorizeUrl(server.url, { acr_values: "mfa", prompt: "none" }), jar);
    assert.equal(new URL(none.headers.get("location")!).searchParams.get("error"), "interaction_required");
    const stepUp = await browse(authorizeUrl(server.url, { acr_values: "mfa" }), jar);
    assert.equal(stepUp.status, 200);
    assert.match(await stepUp.text(), /Set up two-step verification/);
    await server.store.auditWriter.flush();
    const events = await server.domain.auditEvents({ event: "step_up_requested", pageSize: 100 });
    assert.ok(events.events.some((e) => e.userName === user.name));
  });

  it("lists discovery's acr_values_supported", async () => {
    const doc = await fetch(`${server.url}/.well-known/openid-configuration`).then((r) => r.json() as Promise<Record<string, unknown>>);
    assert.deepEqual(doc.acr_values_supported, ["pwd", "mfa"]);
  });
});
