import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import type { RunningServer } from "../../src/app/server.js";
import { authorizeUrl, browse, CookieJar, loginFormFields, submit } from "../support/browserless.js";
import { newSigningKey as newKey, OIDC_CLIENT as CLIENT, OIDC_CODE as CODE, startFakeOidc, type FakeOidc } from "../support/fakeOidc.js";
import { postJson } from "../support/oauth.js";
import { RecordingLogger, startTestServer, TEST_APP } from "../support/server.js";

describe("sign-in through an OIDC provider (discovery, JWKS, ID token)", () => {
  let fake: FakeOidc;
  let origin: string;
  let server: RunningServer;
  let logs: RecordingLogger;

  before(async () => {
    fake = await startFakeOidc();
    origin = fake.origin;
    logs = new RecordingLogger();
    server = await startTestServer({
      logger: logs,
      config: {
        applications: [{ ...TEST_APP, providers: ["oidc", "oidc-userinfo", "oidc-mail"] }],
        providers: [
          { name: "oidc", type: "OIDC", displayName: "Acme OIDC", ...CLIENT, issuer: origin, trustEmail: true },
          { name: "oidc-userinfo", type: "OIDC", ...CLIENT, issuer: origin, userInfoUrl: `${origin}/userinfo` },
          { name: "oidc-mail", type: "OIDC", ...CLIENT, issuer: origin, trustEmail: true, userMapping: { email: "mail" } },
        ],
      },
    });
  });
  after(async () => {
    await server?.close();
    await fake?.close();
  });
  beforeEach(() => fake.reset());

  async function roundTrip(callbackParams: (state: string) => Record<string, string> = (state) => ({ code: CODE, state, iss: origin }), provider = "oidc") {
    const jar = new CookieJar();
    const page = await browse(authorizeUrl(server.url, { scope: "openid" }), jar);
    const res = await submit(`${server.url}/login/oauth/provider/${provider}`, loginFormFields(await page.text()), jar);
    assert.equal(res.status, 303);
    const authUrl = new URL(res.headers.get("location")!);
    fake.nonce = authUrl.searchParams.get("nonce") ?? undefined;
    const state = authUrl.searchParams.get("state")!;
    const callback = await browse(`${server.url}/callback/${provider}?${new URLSearchParams(callbackParams(state))}`, jar);
    return { authUrl, callback };
  }

  const userCount = async () => (await server.domain.userAdmin.list()).length;

  it("discovers the endpoints, sends PKCE S256 and a nonce, verifies the ID token and signs the user in", async () => {
    const { authUrl, callback } = await roundTrip();
    assert.equal(`${authUrl.origin}${authUrl.pathname}`, `${origin}/authorize`);
    assert.equal(authUrl.searchParams.get("scope"), "openid profile email");
    assert.equal(authUrl.searchParams.get("code_challenge_method"), "S256");
    assert.match(fake.nonce ?? "", /^[A-Za-z0-9_-]{43}$/);
    assert.equal(callback.status, 303, await callback.text());
    assert.ok(new URL(callback.headers.get("location")!).searchParams.get("code"));
    const token = fake.requests.find((r) => r.path === "/token")!;
    const verifier = new URLSearchParams(token.body).get("code_verifier")!;
    assert.equal(createHash("sha256").update(verifier).digest("base64url"), authUrl.searchParams.get("code_challenge"));
    const link = await server.store.federatedIdentities.find({ provider: "oidc", externalIdType: "sub", externalId: String(fake.plan.claims.sub) });
    const user = (await server.store.users.findById(link!.userId))!;
    assert.deepEqual([user.displayName, user.email, user.emailVerified], ["Olive OIDC", "oidc@example.com", true]);
  });

  it("with trustEmail, links by email only when the ID token says email_verified: true", async () => {
    const email = `shared-${fake.plan.claims.sub}@example.com`;
    const local = await server.domain.userAdmin.create({ name: `local-${fake.plan.claims.sub}`, password: "pw-local-123", email, emailVerified: true });
    const linkedTo = async () => (await server.store.federatedIdentities.find({ provider: "oidc", externalIdType: "sub", externalId: String(fake.plan.claims.sub) }))!.userId;

    // Without email_verified the email is not known to be the user's: a new user, its email not verified.
    delete fake.plan.claims.email_verified;
    fake.plan.claims.email = email;
    assert.equal((await roundTrip()).callback.status, 303);
    const unverified = (await server.store.users.findById(await linkedTo()))!;
    assert.notEqual(unverified.id, local.id);
    assert.equal(unverified.emailVerified, false);

    fake.reset();
    fake.plan.claims.email = email;
    assert.equal((await roundTrip()).callback.status, 303);
    assert.equal(await linkedTo(), local.id, "email_verified: true links to the local user with that verified email");
  });

  it("with trustEmail, email_verified vouches only for the email claim, not for an email mapped from another claim", async () => {
    const email = `mapped-${fake.plan.claims.sub}@example.com`;
    const local = await server.domain.userAdmin.create({ name: `mapped-${fake.plan.claims.sub}`, password: "pw-local-123", email, emailVerified: true });
    // The provider verified the account's own address; `mail` is another claim, which nothing says was verified.
    fake.plan.claims.email = `own-${fake.plan.claims.sub}@example.com`;
    fake.plan.claims.email_verified = true;
    fake.plan.claims.mail = email;
    assert.equal((await roundTrip(undefined, "oidc-mail")).callback.status, 303);
    const link = await server.store.federatedIdentities.find({ provider: "oidc-mail", externalIdType: "sub", externalId: String(fake.plan.claims.sub) });
    const user = (await server.store.users.findById(link!.userId))!;
    assert.notEqual(user.id, local.id, "not linked to the local user with that verified email");
    assert.deepEqual([user.email, user.emailVerified], [email, false]);
  });

  it("reads the JWKS again for an unknown kid (key rotation)", async () => {
    const rotated = await newKey();
    fake.published = [rotated, ...fake.published];
    fake.plan.key = rotated;
    const { callback } = await roundTrip();
    assert.equal(callback.status, 303, await callback.text());
    assert.equal(fake.requests.filter((r) => r.path === "/jwks").length, 1);
  });

  it("adds the UserInfo claims where the provider sets userInfoUrl; the ID token's win; another sub is refused", async () => {
    const { callback } = await roundTrip(undefined, "oidc-userinfo");
    assert.equal(callback.status, 303, await callback.text());
    assert.equal(fake.requests.find((r) => r.path === "/userinfo")?.headers.authorization, "Bearer oidc-at");
    const link = await server.store.federatedIdentities.find({ provider: "oidc-userinfo", externalIdType: "sub", externalId: String(fake.plan.claims.sub) });
    const user = (await server.store.users.findById(link!.userId))!;
    assert.deepEqual([user.displayName, user.avatar, user.emailVerified], ["Olive OIDC", "https://idp.example/olive.png", false]);

    fake.userinfoSub = "someone-else";
    const refused = await roundTrip(undefined, "oidc-userinfo");
    assert.equal(refused.callback.status, 502);
    assert.match(await refused.callback.text(), /could not be reached or its answer could not be used/);
    const logged = logs.lines.findLast((l) => l.message === "federated sign-in failed at the provider");
    assert.deepEqual(logged?.fields, { provider: "oidc-userinfo", step: "userinfo", reason: "describes another user than the ID token" });
  });

  it("CompleteLogin takes the callback's iss, which this provider promised", async () => {
    const begin = async () => {
      const begun = await postJson(`${server.url}/api/federation/begin-login`, { provider: "oidc" });
      assert.equal(begun.status, 200);
      fake.nonce = new URL(begun.body.auth_url).searchParams.get("nonce") ?? undefined;
      return { state: begun.body.state, code: CODE, login_secret: begun.body.login_secret, provider: "oidc" };
    };
    const withoutIss = await postJson(`${server.url}/api/federation/complete-login`, await begin());
    assert.equal(withoutIss.status, 403);
    assert.match(JSON.stringify(withoutIss.body), /another issuer than Acme OIDC/);
    const done = await postJson(`${server.url}/api/federation/complete-login`, { ...(await begin()), iss: origin });
    assert.equal(done.status, 200, JSON.stringify(done.body));
    assert.equal(done.body.identity.external_id, fake.plan.claims.sub);
  });

  const REFUSALS: [string, () => Promise<void> | void, RegExp, ((state: string) => Record<string, string>)?][] = [
    ["a bad signature", async () => void (fake.plan.key = { ...(await newKey(fake.published[0]!.kid)) }), /ID token has a signature that does not verify/],
    ["a wrong aud", () => void (fake.plan.aud = "someone-else"), /ID token is not valid: its aud claim/],
    ["a wrong nonce", () => void (fake.plan.claims.nonce = "not-the-nonce"), /ID token is not valid: its nonce claim does not match/],
    ["a wrong iss in the ID token", () => void (fake.plan.iss = "https://evil.example"), /ID token is not valid: its iss claim/],
    ["an expired ID token", () => void (fake.plan.exp = Math.floor(Date.now() / 1000) - 300), /ID token has expired/],
    ["an ID token without exp", () => void (fake.plan.exp = null), /ID token is not valid: its exp claim is missing or wrong/],
    ["a wrong azp", () => void (fake.plan.claims.azp = "someone-else"), /ID token is not valid: its azp claim does not match/],
    ["a wrong iss at the callback (RFC 9207)", () => {}, /the answer names another issuer than Acme OIDC/, (state) => ({ code: CODE, state, iss: "https://evil.example" })],
    ["no iss at the callback, which the provider promised", () => {}, /the answer names another issuer than Acme OIDC/, (state) => ({ code: CODE, state })],
  ];
  for (const [what, arrange, message, params] of REFUSALS) {
    it(`ends on an error page naming the provider, and the client gets no code, after ${what}`, async () => {
      await arrange();
      const before = await userCount();
      const { callback } = await roundTrip(params);
      assert.ok(callback.status >= 400, `status ${callback.status}`);
      assert.equal(callback.headers.get("location"), null, "no redirect to the client");
      const text = (await callback.text()).replace(/&#(\d+);/g, (_, code: string) => String.fromCharCode(Number(code)));
      assert.match(text, /Acme OIDC/);
      assert.match(text, message);
      assert.equal(await userCount(), before);
    });
  }
});
