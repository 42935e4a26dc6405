import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import type { ServerResponse } from "node:http";
import type { OAuthError } from "../../src/oauth/errors.js";
import type { RunningServer } from "../../src/app/server.js";
import { authorizeUrl, browse, CookieJar, loginFormFields, submit } from "../support/browserless.js";
import { FakeClock } from "../support/clock.js";
import { freshSharedTestDatabase } from "../support/databases.js";
import { FAKE_CLIENT, FAKE_PROFILE, sendJsonBody, startFakeUpstream, type FakeUpstream } from "../support/fakeUpstream.js";
import { getJson } from "../support/oauth.js";
import { parsePrometheusText, sampleValue } from "../support/prometheus.js";
import { postForm, RecordingLogger, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";
import { scaledMs } from "../support/deadline.js";

const SECRET_KEY = "federation-test-key-0123456789abcdef";
/** The upstream deadline: a second on an idle machine, where the fake provider answers in a few ms; more under load. */
const TIMEOUT_MS = scaledMs(1000);
const CODE = "upstream-code-4711";

/** Local users the email-linking rules are checked against. */
const VERIFIED_USER = { name: "dora", password: "pw-dora-456", email: "dora@example.com", emailVerified: true };
const VERIFIED_ADMIN = { name: "root", password: "pw-root-789", email: "root@example.com", emailVerified: true, isAdmin: true };

/** RFC 6749 §2.3.1 read back: base64, then each half form-urlencoded. */
function decodeBasic(header: string | undefined): { id: string; secret: string } {
  const decoded = Buffer.from(/^Basic (.+)$/.exec(header ?? "")![1]!, "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  const formDecode = (s: string) => decodeURIComponent(s.replace(/\+/g, " "));
  return { id: formDecode(decoded.slice(0, colon)), secret: formDecode(decoded.slice(colon + 1)) };
}

/** A UserInfo answer shaped like GitHub's /user, read through a mapping. */
const GITHUB_SHAPED_MAPPING = { id: "id", username: "login", displayName: "name", email: "email", avatarUrl: "avatar_url" };
const NESTED_MAPPING = { id: "data.user.id", username: "data.user.handle", displayName: "data.user.names.0", email: "emails.0.value", phone: "data.user.phone" };

/** A profile of a user the fake has not sent before. */
function newProfile(over: Record<string, unknown> = {}): Record<string, unknown> {
  const n = randomBytes(4).toString("hex");
  return { ...FAKE_PROFILE, sub: `sub-${n}`, preferred_username: `user${n}`, email: `user${n}@upstream.example`, ...over };
}

/** An answer that streams 2 MiB without a Content-Length. */
function oversized(_req: unknown, res: ServerResponse): void {
  res.on("error", () => {});
  res.writeHead(200, { "content-type": "application/json" });
  res.write('{"name":"');
  const chunk = Buffer.alloc(64 * 1024, "a");
  let sent = 0;
  const pump = (): void => {
    while (sent < 2 * 1024 * 1024 && !res.destroyed) {
      sent += chunk.length;
      if (!res.write(chunk)) {
        res.once("drain", pump);
        return;
      }
    }
    if (!res.destroyed) res.end('"}');
  };
  pump();
}

describe("sign-in through a Custom provider (a fake upstream)", () => {
  let fake: FakeUpstream;
  let server: RunningServer;
  let clock: FakeClock;
  let logs: RecordingLogger;

  before(async () => {
    fake = await startFakeUpstream();
    clock = new FakeClock();
    logs = new RecordingLogger();
    server = await startTestServer({
      clock,
      logger: logs,
      config: {
        applications: [{ ...TEST_APP, providers: ["fake", "trusting", "mapped", "nested", "posting"] }],
        users: [TEST_USER, VERIFIED_USER, VERIFIED_ADMIN],
        // The spec's shared /callback, which these tests return to (federationMixUp.spec.ts: a callback per provider).
        providers: [
          fake.provider("fake", { sharedCallback: true }),
          fake.provider("trusting", { displayName: "Trusting IdP", trustEmail: true, sharedCallback: true }),
          fake.provider("mapped", { displayName: "Mapped IdP", userMapping: GITHUB_SHAPED_MAPPING, sharedCallback: true }),
          fake.provider("nested", { displayName: "Nested IdP", userMapping: NESTED_MAPPING, sharedCallback: true }),
          fake.provider("posting", { displayName: "Posting IdP", tokenAuthMethod: "client_secret_post", pkce: true, sharedCallback: true }),
        ],
      },
      overrides: { secretKey: SECRET_KEY, federationTimeoutMs: TIMEOUT_MS },
    });
  });
  after(async () => {
    await server?.close();
    await fake?.close();
  });
  beforeEach(() => fake.reset());

  /** Open the login page of a new authorize request and press a provider's button. */
  async function pressButton(provider = "fake", jar = new CookieJar()) {
    // account: the client reads the linked identities at get-account.
    const page = await browse(authorizeUrl(server.url, { scope: "openid profile email account" }), jar);
    assert.equal(page.status, 200);
    const fields = loginFormFields(await page.text());
    const res = await submit(`${server.url}/login/oauth/provider/${provider}`, fields, jar);
    assert.equal(res.status, 303);
    const authUrl = new URL(res.headers.get("location")!);
    return { jar, fields, authUrl, state: authUrl.searchParams.get("state")! };
  }

  /** The provider sends the browser back. */
  const returnToCallback = (jar: CookieJar, params: Record<string, string>) =>
    browse(`${server.url}/callback?${new URLSearchParams(params)}`, jar);

  /** A whole round trip that must succeed; returns where the browser goes next. */
  async function signInThrough(provider = "fake"): Promise<{ location: URL; jar: CookieJar }> {
    const { jar, state } = await pressButton(provider);
    const res = await returnToCallback(jar, { code: CODE, state });
    assert.equal(res.status, 303, await res.text());
    return { location: new URL(res.headers.get("location")!), jar };
  }

  const linkOf = (provider: string, sub: unknown) =>
    server.store.federatedIdentities.find({ provider, externalIdType: "sub", externalId: String(sub) });

  async function linkedUser(provider: string, sub: unknown) {
    const link = await linkOf(provider, sub);
    assert.ok(link, "the account is linked");
    return (await server.store.users.findById(link.userId))!;
  }

  /** The page shown instead of a redirect; its text with HTML character references decoded. */
  async function assertErrorPage(res: Response, status: number, message: RegExp): Promise<string> {
    assert.equal(res.status, status);
    assert.match(res.headers.get("content-type")!, /^text\/html/);
    assert.equal(res.headers.get("location"), null);
    const html = await res.text();
    const text = html.replace(/&#(\d+);/g, (_, code: string) => String.fromCharCode(Number(code)));
    assert.match(text, /Sign-in failed/);
    assert.match(text, message);
    return html;
  }

  /** Users and links, to show that a failure created nothing. */
  async function counts() {
    const [row] = await server.store.db("federated_identities").count({ n: "*" });
    return { users: (await server.domain.userAdmin.list()).length, links: Number(row!.n) };
  }

  describe("the round trip", () => {
    it("sends the browser to Auth URL with exactly the spec's parameters and a fresh, unguessable state", async () => {
      const first = await pressButton();
      const second = await pressButton();
      assert.equal(`${first.authUrl.origin}${first.authUrl.pathname}`, `${fake.origin}/authorize`);
      assert.deepEqual([...first.authUrl.searchParams.keys()].sort(), ["client_id", "redirect_uri", "response_type", "scope", "state"]);
      assert.equal(first.authUrl.searchParams.get("client_id"), FAKE_CLIENT.clientId);
      assert.equal(first.authUrl.searchParams.get("redirect_uri"), `${server.issuer}/callback`);
      assert.equal(first.authUrl.searchParams.get("response_type"), "code");
      assert.equal(first.authUrl.searchParams.get("scope"), "openid profile email");
      assert.match(first.state, /^[A-Za-z0-9_-]{43}$/, "256 random bits");
      assert.notEqual(first.state, second.state);
      const stored = await server.store.db("federation_states").select("state_hash");
      assert.ok(stored.length >= 2 && !stored.some((r: { state_hash: string }) => r.state_hash === first.state), "only a hash is stored");
    });

    it("first sign-in: Basic at Token URL, Bearer at UserInfo URL, a new user, and the client gets a code for them", async () => {
      const before = await counts();
      const { location, jar } = await signInThrough();

      const [tokenCall, userinfoCall, ...more] = fake.requests;
      assert.equal(more.length, 0);
      assert.equal(tokenCall!.method, "POST");
      assert.equal(tokenCall!.path, "/token");
      assert.deepEqual(decodeBasic(tokenCall!.headers.authorization), { id: FAKE_CLIENT.clientId, secret: FAKE_CLIENT.clientSecret });
      assert.match(tokenCall!.headers["content-type"]!, /^application\/x-www-form-urlencoded/);
      assert.deepEqual(Object.fromEntries(new URLSearchParams(tokenCall!.body)), {
        code: CODE,
        grant_type: "authorization_code",
        redirect_uri: `${server.issuer}/callback`,
      });
      assert.equal(userinfoCall!.method, "GET");
      assert.equal(userinfoCall!.path, "/userinfo");
      assert.equal(userinfoCall!.headers.authorization, `Bearer ${fake.issuedTokens[0]}`);

      const user = await linkedUser("fake", FAKE_PROFILE.sub);
      assert.deepEqual(
        { name: user.name, displayName: user.displayName, email: user.email, emailVerified: user.emailVerified, avatar: user.avatar, passwordHash: user.passwordHash },
        { name: "carol", displayName: FAKE_PROFILE.name, email: FAKE_PROFILE.email, emailVerified: false, avatar: FAKE_PROFILE.picture, passwordHash: null },
      );
      assert.deepEqual(await counts(), { users: before.users + 1, links: before.links + 1 });
      assert.ok(jar.get("identity_session"), "signed in here");

      assert.equal(`${location.origin}${location.pathname}`, TEST_APP.redirectUris[0]);
      assert.equal(location.searchParams.get("state"), "state-123");
      const tokens = await postForm(`${server.url}/api/login/oauth/access_token`, {
        grant_type: "authorization_code",
        client_id: TEST_APP.clientId,
        client_secret: TEST_APP.clientSecret,
        code: location.searchParams.get("code")!,
      });
      assert.equal(tokens.status, 200, JSON.stringify(tokens.body));
      const bearer = { authorization: `Bearer ${tokens.body.access_token}` };
      const info = await getJson(`${server.url}/api/userinfo`, bearer);
      assert.deepEqual(info.body, {
        sub: user.id,
        iss: server.issuer,
        aud: TEST_APP.clientId,
        name: FAKE_PROFILE.name,
        preferred_username: "carol",
        picture: FAKE_PROFILE.picture,
        email: FAKE_PROFILE.email,
        email_verified: false,
        // A federated sign-in (RFC 8176 fed), one factor (issue #46).
        auth_time: info.body.auth_time,
        acr: "pwd",
        amr: ["fed"],
      });
      const account = await getJson(`${server.url}/api/get-account`, bearer);
      assert.deepEqual(account.body.data.linkedIdentities, [{ provider: "fake", externalId: FAKE_PROFILE.sub, username: "carol" }]);
      assert.ok(!account.text.includes(fake.issuedTokens[0]!), "no upstream token anywhere");
    });

    it("a returning user gets the same local user; the link notes a new upstream name, local data stays", async () => {
      fake.profile = newProfile();
      await signInThrough();
      const first = await linkedUser("fake", fake.profile.sub);
      const before = await counts();

      fake.profile = { ...fake.profile, preferred_username: "renamed-upstream", name: "Changed Name" };
      await signInThrough();
      const second = await linkedUser("fake", fake.profile.sub);
      assert.equal(second.id, first.id);
      assert.equal(second.displayName, first.displayName);
      assert.deepEqual(await counts(), before);
      assert.equal((await linkOf("fake", fake.profile.sub))!.username, "renamed-upstream");
    });

    it("keys the account by preferred_username when the provider sends no sub", async () => {
      const { sub: _sub, ...profile } = newProfile();
      fake.profile = profile;
      await signInThrough();
      const key = { provider: "fake", externalIdType: "preferred_username" as const, externalId: String(profile.preferred_username) };
      const link = await server.store.federatedIdentities.find(key);
      assert.ok(link);
      const before = await counts();
      await signInThrough();
      assert.deepEqual(await counts(), before);
    });

    it("gives a taken or unusable name a valid, unique one, and never links by name or unverified email", async () => {
      const alice = await server.domain.userAdmin.get(TEST_USER.name);
      fake.profile = newProfile({ preferred_username: TEST_USER.name, email: TEST_USER.email });
      await signInThrough();
      const namesake = await linkedUser("fake", fake.profile.sub);
      assert.equal(namesake.name, `${TEST_USER.name}-2`);
      assert.notEqual(namesake.id, alice.id);
      assert.deepEqual(await server.store.federatedIdentities.listByUser(alice.id), []);

      fake.profile = newProfile({ preferred_username: " Zoë van der Berg! " });
      await signInThrough();
      assert.equal((await linkedUser("fake", fake.profile.sub)).name, "Zo-van-der-Berg");
    });

    it("links by email only for a provider trusted with emails, to the one non-admin user with it verified", async () => {
      const dora = await server.domain.userAdmin.get(VERIFIED_USER.name);
      const root = await server.domain.userAdmin.get(VERIFIED_ADMIN.name);

      fake.profile = newProfile({ email: VERIFIED_USER.email });
      await signInThrough("fake");
      assert.notEqual((await linkedUser("fake", fake.profile.sub)).id, dora.id, "an untrusted provider never links by email");

      fake.profile = newProfile({ email: VERIFIED_USER.email, email_verified: false });
      await signInThrough("trusting");
      assert.notEqual((await linkedUser("trusting", fake.profile.sub)).id, dora.id, "the provider says it is not verified");

      fake.profile = newProfile({ email: VERIFIED_ADMIN.email });
      await signInThrough("trusting");
      assert.notEqual((await linkedUser("trusting", fake.profile.sub)).id, root.id, "never an administrator");

      fake.profile = newProfile({ email: VERIFIED_USER.email });
      const before = await counts();
      await signInThrough("trusting");
      assert.equal((await linkedUser("trusting", fake.profile.sub)).id, dora.id);
      assert.deepEqual(await counts(), { users: before.users, links: before.links + 1 });

      fake.profile = newProfile();
      await signInThrough("trusting");
      const fresh = await linkedUser("trusting", fake.profile.sub);
      assert.equal(fresh.emailVerified, true, "a trusted provider's email counts as verified");
    });

    it("refuses a disabled user", async () => {
      fake.profile = newProfile();
      await signInThrough();
      const user = await linkedUser("fake", fake.profile.sub);
      await server.domain.userAdmin.update({ name: user.name, disabled: true });
      const { jar, state } = await pressButton();
      await assertErrorPage(await returnToCallback(jar, { code: CODE, state }), 400, /This account is disabled/);
      assert.equal(jar.get("identity_session"), undefined);
    });

    for (const upstreamError of ["access_denied", "server_error"]) {
      it(`sends the client access_denied with its state and iss when the provider answers ${upstreamError}, and calls nothing`, async () => {
        const { jar, state } = await pressButton();
        const res = await returnToCallback(jar, { error: upstreamError, error_description: 'The user said <no> "\\', state });
        assert.equal(res.status, 303);
        const location = new URL(res.headers.get("location")!);
        assert.equal(`${location.origin}${location.pathname}`, TEST_APP.redirectUris[0]);
        assert.equal(location.searchParams.get("error"), "access_denied");
        assert.equal(location.searchParams.get("state"), "state-123");
        assert.equal(location.searchParams.get("iss"), server.issuer);
        assert.equal(location.searchParams.get("error_description"), `Fake IdP did not sign you in (${upstreamError}: The user said <no> )`);
        assert.equal(location.searchParams.get("code"), null);
        assert.deepEqual(fake.requests, []);
        assert.equal(jar.get("identity_session"), undefined);
        // The state and the authorize request are used up.
        await assertErrorPage(await returnToCallback(jar, { code: CODE, state }), 400, /already completed/);
      });
    }

    it("audits a browser's federated sign-in and a provider's refusal with the browser's address", async () => {
      await signInThrough();
      const { jar, state } = await pressButton();
      await returnToCallback(jar, { error: "access_denied", state });
      await server.store.auditWriter.flush();
      const events = (await server.domain.auditEvents({ pageSize: 2, event: "federated_sign_in" })).events;
      assert.deepEqual(
        events.map((e) => [e.outcome, e.clientAddress, e.details?.provider]),
        [["failure", "127.0.0.1", "fake"], ["success", "127.0.0.1", "fake"]],
      );
    });

    it("shows the provider's error on a page when the authorize request is gone", async () => {
      const { jar, fields, state } = await pressButton();
      assert.equal((await submit(`${server.url}/login`, { ...fields, username: TEST_USER.name, password: TEST_USER.password }, jar)).status, 303);
      const res = await returnToCallback(jar, { error: "access_denied", error_description: "The user said <no>", state });
      const html = await assertErrorPage(res, 400, /Fake IdP did not sign you in \(access_denied: The user said <no>\)/);
      assert.ok(!html.includes("<no>"));
    });

    it("keeps the client secret encrypted at rest, under a key bound to the provider", async () => {
      const row = await server.store.db("providers").where({ name: "fake" }).first();
      assert.ok(!JSON.stringify(row).includes(FAKE_CLIENT.clientSecret));
      assert.match(row.client_secret, /^aes256gcm:v1:/);
      const trusting = await server.store.providers.findByName("trusting");
      assert.notEqual(trusting!.clientSecret, row.client_secret, "same secret, different ciphertext");
    });
  });

  describe("user mapping", () => {
    it("reads a GitHub-shaped answer through a mapping: the number id keys the link, nulls stay empty", async () => {
      fake.profile = { id: 4711, login: "octocat", name: null, email: null, avatar_url: "https://avatars.example/u/4711" };
      const before = await counts();
      await signInThrough("mapped");
      const user = await linkedUser("mapped", "4711");
      assert.deepEqual(
        { name: user.name, displayName: user.displayName, email: user.email, avatar: user.avatar },
        { name: "octocat", displayName: "", email: "", avatar: "https://avatars.example/u/4711" },
      );
      assert.equal((await linkOf("mapped", 4711))!.username, "octocat");
      // Renamed upstream: the same user, found by the stable id.
      fake.profile = { ...fake.profile, login: "octocat-renamed", email: "octo@example.com" };
      await signInThrough("mapped");
      assert.equal((await linkedUser("mapped", "4711")).id, user.id);
      assert.deepEqual(await counts(), { users: before.users + 1, links: before.links + 1 });
    });

    it("follows nested paths and array indexes; without a user name, derives a unique one", async () => {
      fake.profile = { data: { user: { id: "n-1", names: ["Nested Person"], phone: "+1 555 0100" } }, emails: [{ value: "nested@example.com" }] };
      await signInThrough("nested");
      const user = await linkedUser("nested", "n-1");
      assert.deepEqual(
        { name: user.name, displayName: user.displayName, email: user.email, phone: user.phone, avatar: user.avatar },
        { name: "nested-n-1", displayName: "Nested Person", email: "nested@example.com", phone: "+1 555 0100", avatar: "" },
      );
      assert.equal((await linkOf("nested", "n-1"))!.username, "");
    });

    const MISSING: [string, Record<string, unknown>, RegExp][] = [
      ["missing", { login: "no-id", name: "x" }, /Mapped IdP sent no usable id \(id is missing\)/],
      ["null", { id: null, login: "null-id" }, /Mapped IdP sent no usable id \(id is missing\)/],
      ["of the wrong type", { id: { nested: 1 }, login: "object-id" }, /Mapped IdP sent no usable id \(id is neither a string nor a number\)/],
    ];
    for (const [what, profile, message] of MISSING) {
      it(`ends on an error page naming the provider and the field when the id is ${what}, with a warning log line`, async () => {
        logs.lines.length = 0;
        fake.profile = profile;
        const before = await counts();
        const { jar, state } = await pressButton("mapped");
        const html = await assertErrorPage(await returnToCallback(jar, { code: CODE, state }), 502, message);
        assert.ok(!/temporarily_unavailable/.test(html));
        assert.deepEqual(await counts(), before);
        const line = logs.lines.find((l) => l.message === "federated sign-in: the provider's answer lacks a mapped field");
        assert.equal(line?.level, "warn");
        assert.deepEqual({ provider: line?.fields?.provider, field: line?.fields?.field, path: line?.fields?.path }, { provider: "mapped", field: "id", path: "id" });
        for (const token of fake.issuedTokens) assert.ok(!logs.text().includes(token));
      });
    }

    it("without a mapping, needs sub or preferred_username; the other claims may be missing", async () => {
      fake.profile = { name: "Nobody" };
      const { jar, state } = await pressButton();
      await assertErrorPage(await returnToCallback(jar, { code: CODE, state }), 502, /Fake IdP sent no usable id \(sub or preferred_username is missing\)/);
      fake.profile = { sub: `only-sub-${randomBytes(3).toString("hex")}` };
      await signInThrough();
      const user = await linkedUser("fake", fake.profile.sub);
      assert.deepEqual([user.name, user.displayName, user.email, user.avatar], [`fake-${fake.profile.sub}`, "", "", ""]);
    });
  });

  describe("Custom options", () => {
    it("client_secret_post with PKCE (S256), and a token answer in application/x-www-form-urlencoded", async () => {
      fake.token = (_req, res) => {
        const accessToken = `upstream-at-${randomBytes(8).toString("hex")}`;
        fake.issuedTokens.push(accessToken);
        res.writeHead(200, { "content-type": "application/x-www-form-urlencoded; charset=utf-8" });
        res.end(new URLSearchParams({ access_token: accessToken, token_type: "bearer", scope: "user" }).toString());
      };
      fake.profile = newProfile();
      const { jar, state, authUrl } = await pressButton("posting");
      assert.equal(authUrl.searchParams.get("code_challenge_method"), "S256");
      const challenge = authUrl.searchParams.get("code_challenge")!;
      assert.match(challenge, /^[A-Za-z0-9_-]{43}$/);
      const stored = await server.store.db("federation_states").whereNotNull("code_verifier").select("code_verifier");
      assert.ok(!stored.some((r: { code_verifier: string }) => r.code_verifier === challenge));
      const res = await returnToCallback(jar, { code: CODE, state });
      assert.equal(res.status, 303, await res.text());

      const tokenCall = fake.requests.find((r) => r.path === "/token")!;
      assert.equal(tokenCall.headers.authorization, undefined, "no Basic credentials");
      const form = Object.fromEntries(new URLSearchParams(tokenCall.body));
      const { code_verifier: verifier, ...rest } = form;
      assert.deepEqual(rest, {
        code: CODE,
        grant_type: "authorization_code",
        redirect_uri: `${server.issuer}/callback`,
        client_id: FAKE_CLIENT.clientId,
        client_secret: FAKE_CLIENT.clientSecret,
      });
      assert.equal(createHash("sha256").update(verifier!).digest("base64url"), challenge);
      assert.ok(await linkOf("posting", fake.profile.sub));
    });

    it("sends no PKCE and Basic credentials by default", async () => {
      const { authUrl } = await pressButton("fake");
      assert.equal(authUrl.searchParams.get("code_challenge"), null);
    });
  });

  describe("upstream failures end on an error page with nothing created", () => {
    const FAILURES: [string, (f: FakeUpstream) => void, RegExp][] = [
      ["a non-2xx token response", (f) => (f.token = (_q, res) => sendJsonBody(res, 500, { error: "server_error" })), /token endpoint answered HTTP 500 \(server_error\)/],
      [
        "a token response that is not JSON",
        (f) => (f.token = (_q, res) => res.writeHead(200, { "content-type": "text/html" }).end("<html>hello</html>")),
        /token endpoint answered with something other than a JSON object/,
      ],
      ["a token response without access_token", (f) => (f.token = (_q, res) => sendJsonBody(res, 200, { token_type: "Bearer" })), /token endpoint sent no access_token/],
      [
        "a token type other than Bearer",
        (f) => (f.token = (_q, res) => sendJsonBody(res, 200, { access_token: "x", token_type: "mac" })),
        /token endpoint sent token_type mac, not Bearer/,
      ],
      ["a non-2xx userinfo response", (f) => (f.userinfo = (_q, res) => sendJsonBody(res, 401, { error: "invalid_token" })), /UserInfo endpoint answered HTTP 401 \(invalid_token\)/],
      ["a timeout", (f) => (f.token = () => {}), new RegExp(`token endpoint gave no complete answer within ${TIMEOUT_MS} ms`)],
      [
        "a redirect loop",
        (f) => (f.token = (_q, res) => res.writeHead(302, { location: "/token" }).end()),
        /token endpoint answered with a redirect \(HTTP 302\), which is not followed/,
      ],
      [
        "a redirect to another host",
        (f) => (f.token = (_q, res) => res.writeHead(307, { location: `${f.origin.replace("127.0.0.1", "localhost")}/elsewhere` }).end()),
        /token endpoint answered with a redirect \(HTTP 307\), which is not followed/,
      ],
      ["an oversized body", (f) => (f.userinfo = oversized), /UserInfo endpoint answered with more than 1048576 bytes/],
    ];

    const STEPS: Record<string, string> = { token: "token endpoint", userinfo: "UserInfo endpoint" };
    for (const [what, misbehave, message] of FAILURES) {
      it(`after ${what}`, async () => {
        misbehave(fake);
        const before = await counts();
        const { jar, state } = await pressButton();
        logs.lines.length = 0;
        // The page says the same whatever failed (issue #41 §3); the log names the step and the reason.
        await assertErrorPage(await returnToCallback(jar, { code: CODE, state }), 502, /Signing in with Fake IdP failed: Fake IdP could not be reached or its answer could not be used/);
        const logged = logs.lines.find((l) => l.message === "federated sign-in failed at the provider")?.fields;
        assert.match(`${STEPS[String(logged?.step)]} ${String(logged?.reason)}`, message);
        assert.deepEqual(await counts(), before);
        assert.equal(jar.get("identity_session"), undefined, "not signed in");
        const tokenCalls = fake.requests.filter((r) => r.path === "/token").length;
        assert.equal(tokenCalls, 1, "one call to Token URL, never a redirect followed");
        assert.ok(!fake.requests.some((r) => r.path === "/elsewhere"), "nothing at the redirect's target");
      });
    }

    it("are logged with provider, step and reason, never with the secret, the code or a token", async () => {
      logs.lines.length = 0;
      fake.profile = newProfile();
      await signInThrough();
      fake.token = (_q, res) => sendJsonBody(res, 400, { error: "invalid_grant" });
      const { jar, state } = await pressButton();
      await returnToCallback(jar, { code: CODE, state });

      const failure = logs.lines.find((l) => l.message === "federated sign-in failed at the provider");
      assert.deepEqual(failure?.fields, { provider: "fake", step: "token", reason: "answered HTTP 400 (invalid_grant)" });
      assert.equal(failure?.level, "warn");
      const everything = logs.text();
      for (const secret of [FAKE_CLIENT.clientSecret, SECRET_KEY, CODE, state, ...fake.issuedTokens]) {
        assert.ok(!everything.includes(secret), `the logs hold no ${secret.slice(0, 12)}...`);
      }
      assert.ok(logs.lines.some((l) => l.message === "federated sign-in" && l.fields?.provider === "fake"), "successes are logged too");
    });

    it("are counted on /metrics per provider and outcome: ok, token_failed, userinfo_failed", async () => {
      const upstreamCalls = async () => {
        const samples = parsePrometheusText(await (await fetch(`${server.url}/metrics`)).text());
        const count = (provider: string, outcome: string) => sampleValue(samples, "identity_federation_upstream_calls_total", { provider, outcome });
        return { ok: count("fake", "ok"), token: count("fake", "token_failed"), userinfo: count("fake", "userinfo_failed"), trusting: count("trusting", "ok") };
      };
      const fail = async () => {
        const { jar, state } = await pressButton();
        assert.equal((await returnToCallback(jar, { code: CODE, state })).status, 502);
      };
      const before = await upstreamCalls();

      fake.profile = newProfile();
      await signInThrough();
      fake.token = (_q, res) => sendJsonBody(res, 400, { error: "invalid_grant" });
      await fail();
      fake.reset();
      fake.userinfo = (_q, res) => sendJsonBody(res, 401, { error: "invalid_token" });
      await fail();

      assert.deepEqual(await upstreamCalls(), { ok: before.ok + 1, token: before.token + 1, userinfo: before.userinfo + 1, trusting: before.trusting });
    });
  });

  describe("state attacks", () => {
    it("refuses a replayed callback without calling the provider again", async () => {
      const { jar, state } = await pressButton();
      assert.equal((await returnToCallback(jar, { code: CODE, state })).status, 303);
      const calls = fake.requests.length;
      const before = await counts();
      await assertErrorPage(await returnToCallback(jar, { code: CODE, state }), 400, /unknown or was already completed/);
      assert.equal(fake.requests.length, calls);
      assert.deepEqual(await counts(), before);
    });

    it("refuses a state swapped into another browser, which stays usable by its own", async () => {
      const victim = await pressButton();
      const attacker = new CookieJar();
      await browse(authorizeUrl(server.url), attacker); // a CSRF cookie of its own
      await assertErrorPage(await returnToCallback(attacker, { code: CODE, state: victim.state }), 400, /started in another browser/);
      await assertErrorPage(await returnToCallback(new CookieJar(), { code: CODE, state: victim.state }), 400, /started in another browser/);
      assert.deepEqual(fake.requests, []);
      assert.equal(attacker.get("identity_session"), undefined);
      assert.equal((await returnToCallback(victim.jar, { code: CODE, state: victim.state })).status, 303);
    });

    it("refuses an expired state (10 minutes), though the authorize request would still live", async () => {
      const late = await pressButton();
      const inTime = await pressButton();
      clock.advanceSeconds(599);
      assert.equal((await returnToCallback(inTime.jar, { code: CODE, state: inTime.state })).status, 303);
      clock.advanceSeconds(2);
      const calls = fake.requests.length;
      await assertErrorPage(await returnToCallback(late.jar, { code: CODE, state: late.state }), 400, /has expired/);
      assert.equal(fake.requests.length, calls);
    });

    it("refuses an unknown or missing state, and a state begun over RPC", async () => {
      const { jar } = await pressButton();
      await assertErrorPage(await returnToCallback(jar, { code: CODE, state: randomBytes(32).toString("base64url") }), 400, /unknown/);
      await assertErrorPage(await returnToCallback(jar, { code: CODE }), 400, /sent no state back/);
      const begun = await server.domain.federation.begin("fake", "an rpc caller's secret");
      await assertErrorPage(await returnToCallback(jar, { code: CODE, state: begun.state }), 400, /started by an application/);
      assert.deepEqual(fake.requests, []);
    });

    it("calls nothing when the authorize request was finished meanwhile (say, by password in another tab)", async () => {
      const { jar, fields, state } = await pressButton();
      assert.equal((await submit(`${server.url}/login`, { ...fields, username: TEST_USER.name, password: TEST_USER.password }, jar)).status, 303);
      await assertErrorPage(await returnToCallback(jar, { code: CODE, state }), 400, /sign-in request is unknown or has expired/);
      assert.deepEqual(fake.requests, []);
    });
  });
});

describe("provider secrets at start-up", () => {
  let fake: FakeUpstream;
  before(async () => (fake = await startFakeUpstream()));
  after(() => fake.close());

  it("without IDENTITY_SECRET_KEY are stored as given, with a warning", async () => {
    const logs = new RecordingLogger();
    const server = await startTestServer({ logger: logs, config: { providers: [fake.provider("plain")] } });
    try {
      assert.equal((await server.store.providers.findByName("plain"))!.clientSecret, FAKE_CLIENT.clientSecret);
      assert.ok(logs.lines.some((l) => l.level === "error" && /IDENTITY_SECRET_KEY is not set/.test(l.message)));
    } finally {
      await server.close();
    }
  });

  it("sealed under another key cannot be read: start-up says so, and sign-in fails without calling the provider", async () => {
    const shared = freshSharedTestDatabase();
    try {
      const database = shared.url;
      const first = await startTestServer({ database, config: { providers: [fake.provider("sealed")] }, overrides: { secretKey: SECRET_KEY } });
      await first.close();
      const logs = new RecordingLogger();
      const server = await startTestServer({ database, logger: logs, config: {}, overrides: { secretKey: `${SECRET_KEY}-rotated` } });
      try {
        assert.ok(logs.lines.some((l) => /provider sealed: its client secret cannot be read \(it does not decrypt with this IDENTITY_SECRET_KEY\)/.test(l.message)));
        const { federation } = server.domain;
        const begun = await federation.begin("sealed", "caller secret");
        const login = await federation.takeState(begun.state, { kind: "rpc", loginSecret: "caller secret" }, "sealed");
        await assert.rejects(federation.complete(login, CODE), (err: OAuthError) => err.code === "server_error" && /misconfigured/.test(err.description));
        assert.deepEqual(fake.requests, []);
      } finally {
        await server.close();
      }
    } finally {
      await shared.dispose();
    }
  });
});
