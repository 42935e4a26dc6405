import assert from "node:assert/strict";
import type { PublicKeyCredentialCreationOptionsJSON } from "@simplewebauthn/server";
import type { RunningServer } from "../../src/app/server.js";
import { authorizeUrl, browse, CookieJar, loginFormFields, submit } from "../support/browserless.js";
import { FakeClock } from "../support/clock.js";
import { enrolTotp, redeem } from "../support/factors.js";
import { startTestServer, TEST_APP, TEST_USER } from "../support/server.js";
import { SoftAuthenticator } from "../support/softAuthenticator.js";

const STRICT_APP = { ...TEST_APP, name: "strict", clientId: "client-strict", clientSecret: "secret-strict-of-client-strict", mfa: "required" };
const USERS = ["bob", "carol", "dave", "erin", "frank", "gina"].map((name) => ({ name, password: `pw-${name}-12345` }));
const user = (name: string) => USERS.find((u) => u.name === name)!;
const ENROL = "/login/factor/enrol/passkey";

/**
 * A passkey enrolled as the first factor at the sign-in of an `mfa: required`
 * application (web/factorStep.ts), over plain HTTP with a software
 * authenticator: the page, one enrolment to a code, and the refusals a
 * browser would not provoke: another sign-in's or another user's challenge,
 * one answer posted in parallel or again, an expired challenge, and a user
 * who has a factor already. Chromium enrols one in passkeyEnrolBrowser.spec.ts.
 */
describe("passkey enrolment at sign-in over HTTP", function () {
  this.timeout(60_000);
  const clock = new FakeClock();
  let server: RunningServer;

  before(async () => {
    server = await startTestServer({ clock, overrides: { host: "localhost" }, config: { applications: [TEST_APP, STRICT_APP], users: [TEST_USER, ...USERS] } });
  });
  after(() => server?.close());

  /** A browser past the password of the strict application: the enrolment page and its form's fields. */
  async function atEnrolment(who: { name: string; password: string }) {
    const jar = new CookieJar();
    const page = await browse(authorizeUrl(server.issuer, { client_id: STRICT_APP.clientId }), jar);
    const fields = loginFormFields(await page.text());
    const res = await submit(`${server.issuer}/login`, { ...fields, username: who.name, password: who.password }, jar);
    const html = await res.text();
    assert.equal(res.status, 200);
    assert.match(html, /Set up two-step verification/);
    return { jar, res, html, fields: { ...fields, factor: /name="factor" value="([^"]+)"/.exec(html)![1]! } };
  }

  type Step = Awaited<ReturnType<typeof atEnrolment>>;

  async function options(step: Pick<Step, "jar" | "fields">): Promise<PublicKeyCredentialCreationOptionsJSON> {
    const res = await submit(`${server.issuer}${ENROL}/options`, step.fields, step.jar);
    assert.equal(res.status, 200);
    return (await res.json()) as PublicKeyCredentialCreationOptionsJSON;
  }

  const answer = async (step: Step, authenticator = new SoftAuthenticator({ origin: server.issuer })) => JSON.stringify(authenticator.register(await options(step)));
  const enrol = (step: Pick<Step, "jar" | "fields">, response: string, extra: Record<string, string> = {}) => submit(`${server.issuer}${ENROL}`, { ...step.fields, ...extra, response }, step.jar);
  const passkeysOf = async (name: string) => server.domain.passkeys.list((await server.store.users.findByName(name))!.id);

  it("offers a passkey under the passkey CSP; enrolled, the recovery codes follow, then a code with amr pwd hwk user mfa", async () => {
    const step = await atEnrolment(user("bob"));
    assert.match(step.res.headers.get("content-security-policy") ?? "", /default-src 'none'; script-src 'self'; connect-src 'self';/);
    assert.match(step.html, /data-passkey="register" data-options="\/login\/factor\/enrol\/passkey\/options"/);
    const opts = await options(step);
    assert.deepEqual([opts.rp.id, opts.authenticatorSelection?.userVerification, opts.authenticatorSelection?.residentKey], ["localhost", "required", "required"]);
    const res = await enrol(step, JSON.stringify(new SoftAuthenticator({ origin: server.issuer }).register(opts)));
    assert.equal(res.status, 200);
    assert.equal((await res.text()).match(/<li>/g)?.length, 10, "ten recovery codes");
    const done = await submit(`${server.issuer}/login/factor/continue`, step.fields, step.jar);
    assert.equal(done.status, 303);
    const { idToken } = await redeem(server, new URL(done.headers.get("location")!), STRICT_APP);
    assert.deepEqual([idToken.acr, idToken.amr], ["mfa", ["pwd", "hwk", "user", "mfa"]]);
    await server.store.auditWriter.flush();
    const added = (await server.domain.auditEvents({ event: "passkey_added", pageSize: 100 })).events;
    const [bobs] = await passkeysOf("bob");
    assert.ok(added.some((e) => e.outcome === "success" && e.userName === "bob" && e.details?.factorId === bobs?.id));
  });

  it("attack: another sign-in's challenge, or another user's, is refused; a user name in the form changes nothing", async () => {
    const [carol, dave] = [await atEnrolment(user("carol")), await atEnrolment(user("dave"))];
    const carols = await answer(carol);
    // Carol's answer on Dave's sign-in: his challenge is another.
    const onDave = await enrol(dave, carols);
    assert.equal(onDave.status, 400);
    assert.match(await onDave.text(), /The passkey was not added/);
    // Dave's challenge, answered with Carol's form (her pending sign-in, her browser): not hers.
    const davesAnswer = await answer(dave);
    assert.equal((await enrol(carol, davesAnswer)).status, 400);
    assert.deepEqual([(await passkeysOf("carol")).length, (await passkeysOf("dave")).length], [0, 0]);
    // Carol's own answer, with Dave's name posted beside it: the passkey is the signed-in step's user's.
    assert.equal((await enrol(carol, await answer(carol), { username: "dave", user: "dave" })).status, 200);
    assert.deepEqual([(await passkeysOf("carol")).length, (await passkeysOf("dave")).length], [1, 0]);
    // No password step at all: no options.
    const jar = new CookieJar();
    const fields = loginFormFields(await (await browse(authorizeUrl(server.issuer, { client_id: STRICT_APP.clientId }), jar)).text());
    assert.equal((await submit(`${server.issuer}${ENROL}/options`, fields, jar)).status, 403);
  });

  it("attack: one answer posted 10 times at once adds one passkey; posted again on another sign-in, none", async () => {
    const erin = await atEnrolment(user("erin"));
    const response = await answer(erin);
    const statuses = (await Promise.all(Array.from({ length: 10 }, () => enrol(erin, response)))).map((r) => r.status);
    assert.deepEqual([statuses.filter((s) => s === 200).length, statuses.filter((s) => s === 400 || s === 403).length], [1, 9], `statuses ${statuses}`);
    assert.equal((await passkeysOf("erin")).length, 1);
    const frank = await atEnrolment(user("frank"));
    await options(frank);
    assert.equal((await enrol(frank, response)).status, 400);
    assert.equal((await passkeysOf("frank")).length, 0);
  });

  it("refuses a challenge five minutes old, and a user with a factor enrols none from the second step", async () => {
    const gina = await atEnrolment(user("gina"));
    const response = await answer(gina);
    clock.advanceSeconds(5 * 60);
    assert.equal((await enrol(gina, response)).status, 400);
    assert.equal((await passkeysOf("gina")).length, 0);
    // Alice has a one-time code: after her password comes the code, and the enrolment paths are closed.
    await enrolTotp(server, TEST_USER.name);
    const jar = new CookieJar();
    const fields = loginFormFields(await (await browse(authorizeUrl(server.issuer, { client_id: STRICT_APP.clientId }), jar)).text());
    const verify = await submit(`${server.issuer}/login`, { ...fields, username: TEST_USER.name, password: TEST_USER.password }, jar);
    assert.match(await verify.text(), /Two-step verification/);
    assert.equal((await submit(`${server.issuer}${ENROL}/options`, fields, jar)).status, 403);
    const own = new SoftAuthenticator({ origin: server.issuer });
    const forged = JSON.stringify(own.register((await server.domain.passkeys.registrationOptions((await server.store.users.findByName(TEST_USER.name))!, fields.request))));
    assert.equal((await enrol({ jar, fields: { ...fields, factor: "" } }, forged)).status, 403);
    assert.equal((await passkeysOf(TEST_USER.name)).length, 0);
  });
});
