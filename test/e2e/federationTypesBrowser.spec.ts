import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import * as oauth from "oauth4webapi";
import type { RunningServer } from "../../src/app/server.js";
import { startCallbackServer, type CallbackServer } from "../support/callbackServer.js";
import { useChromium } from "../support/chromium.js";
import { newSigningKey, OIDC_ACCESS_TOKEN, OIDC_CLIENT, startFakeOidc, type FakeOidc } from "../support/fakeOidc.js";
import { PRESET_CLIENT, startFakeGitHub, startFakeGoogle, type FakeGitHub, type FakeGoogle } from "../support/fakePresets.js";
import { decodeBasic, FAKE_CLIENT, pkceHolds, startFakeUpstream, type FakeProvider, type FakeUpstream, type UpstreamRequest } from "../support/fakeUpstream.js";
import { RecordingLogger, startTestServer, TEST_APP } from "../support/server.js";

const SCREENSHOTS = "test-output/screenshots";

/** A Custom provider whose answer is not the spec's: read through a mapping of nested paths, with a number for the id. */
const NESTED_MAPPING = {
  id: "account.number",
  username: "account.handle",
  displayName: "account.fullName",
  email: "contact.emails.0.address",
  avatarUrl: "account.avatar",
  phone: "contact.phone",
};
const NESTED_PROFILE = {
  account: { number: 4711, handle: "dana", fullName: "Dana Nested", avatar: "https://custom.example/dana.png" },
  contact: { emails: [{ address: "dana@custom.example" }], phone: "+1 555 0199" },
};

/**
 * Every provider type and preset end to end in headless Chromium: the
 * client's authorize request, the provider's button on our login page, the
 * provider's authorize page (a local fake that approves at once), our
 * /callback, then the client (oauth4webapi) exchanges the code and calls our
 * userinfo. Each fake records what it received, and the tests check it:
 * PKCE, nonce, client authentication and Accept.
 */
describe("every provider type and preset, end to end in headless Chromium", function () {
  this.timeout(60_000);
  const chromium = useChromium();
  let callback: CallbackServer;
  let custom: FakeUpstream;
  let github: FakeGitHub;
  let google: FakeGoogle;
  let oidc: FakeOidc;
  let server: RunningServer;
  let logs: RecordingLogger;
  let as: oauth.AuthorizationServer;
  const client: oauth.Client = { client_id: TEST_APP.clientId };
  // oauth4webapi refuses plain http unless told; everything runs on loopback here.
  const loopback = { [oauth.allowInsecureRequests]: true } as const;

  before(async () => {
    callback = await startCallbackServer();
    [custom, github, google, oidc] = await Promise.all([startFakeUpstream(), startFakeGitHub(), startFakeGoogle(), startFakeOidc()]);
    const favicon = `${new URL(callback.url).origin}/favicon.svg`;
    logs = new RecordingLogger();
    server = await startTestServer({
      logger: logs,
      config: {
        applications: [{ ...TEST_APP, redirectUris: [callback.url], providers: ["custom", "github", "google", "oidc", "mismatch"] }],
        // Each returns to the spec's shared /callback (federationMixUp.spec.ts: a callback per provider).
        providers: [
          custom.provider("custom", { displayName: "Nested IdP", userMapping: NESTED_MAPPING, tokenAuthMethod: "client_secret_post", pkce: true, favicon, sharedCallback: true }),
          // The presets with only client id and secret, plus the URL fields that point them at the fakes.
          { name: "github", type: "GitHub", displayName: "GitHub", ...PRESET_CLIENT, ...github.urls, favicon, sharedCallback: true },
          { name: "google", type: "Google", displayName: "Google", ...PRESET_CLIENT, ...google.urls, trustEmail: true, favicon, sharedCallback: true },
          { name: "oidc", type: "OIDC", displayName: "Acme OIDC", ...OIDC_CLIENT, issuer: oidc.origin, trustEmail: true, favicon, sharedCallback: true },
          // Its answer lacks the mapped id; its favicon is a 404.
          custom.provider("mismatch", { displayName: "Mismatched IdP", userMapping: { id: "account.uuid" }, favicon: `${custom.origin}/missing-favicon.ico`, sharedCallback: true }),
        ],
      },
    });
    const issuer = new URL(server.issuer);
    as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: "oidc", ...loopback }));
  });
  after(async () => {
    await server?.close();
    await Promise.all([callback, custom, github, google, oidc].map((s) => s?.close()));
  });
  beforeEach(() => {
    custom.reset();
    custom.profile = { ...NESTED_PROFILE };
    oidc.reset();
    for (const fake of [github, google]) {
      fake.requests.length = 0;
      fake.authorizations.length = 0;
    }
    logs.lines.length = 0;
  });

  /** The client's authorize request (PKCE and a nonce of its own), which shows our login page. */
  async function openLoginPage() {
    const state = oauth.generateRandomState();
    const nonce = oauth.generateRandomNonce();
    const verifier = oauth.generateRandomCodeVerifier();
    const url = new URL(as.authorization_endpoint!);
    const params = {
      client_id: TEST_APP.clientId,
      redirect_uri: callback.url,
      response_type: "code",
      scope: "openid profile email phone",
      state,
      nonce,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
    };
    for (const [key, value] of Object.entries(params)) url.searchParams.set(key, value);
    await chromium.page.goto(url.href);
    return { state, nonce, verifier };
  }

  /** The provider's button on the login page of a new authorize request. */
  async function pressProviderButton(label: string) {
    const request = await openLoginPage();
    await chromium.page.getByRole("button", { name: `Sign in with ${label}` }).click();
    return request;
  }

  /** The whole round trip; returns the client's view (ID token claims and userinfo) and where the provider was sent. */
  async function signInWith(label: string, fake: FakeProvider) {
    const callsBefore = callback.requests.length;
    const { state, nonce, verifier } = await pressProviderButton(label);
    await chromium.page.waitForURL((url) => url.href.startsWith(callback.url));
    assert.equal(callback.requests.length, callsBefore + 1);
    assert.equal(fake.authorizations.length, 1, "the browser went through the provider's authorize page once");
    const authorization = fake.authorizations[0]!;
    assert.equal(authorization.get("redirect_uri"), `${server.issuer}/callback`);
    assert.equal(authorization.get("response_type"), "code");
    assert.notEqual(authorization.get("state"), state, "the provider sees our state, never the client's");

    const params = oauth.validateAuthResponse(as, client, new URL(chromium.page.url()), state);
    const response = await oauth.authorizationCodeGrantRequest(as, client, oauth.ClientSecretBasic(TEST_APP.clientSecret), params, callback.url, verifier, loopback);
    const tokens = await oauth.processAuthorizationCodeResponse(as, client, response, { expectedNonce: nonce, requireIdToken: true });
    const idClaims = oauth.getValidatedIdTokenClaims(tokens)!;
    const userinfo = await oauth.processUserInfoResponse(as, client, idClaims.sub, await oauth.userInfoRequest(as, client, tokens.access_token, loopback));
    return { authorization, idClaims, userinfo };
  }

  /** The code the fake's authorize page issued, and the request that brought it to the token endpoint. */
  function tokenRequest(requests: UpstreamRequest[], path: string, authorization: URLSearchParams, fake: FakeProvider) {
    const calls = requests.filter((r) => r.path === path);
    assert.equal(calls.length, 1, `one call to ${path}`);
    const form = new URLSearchParams(calls[0]!.body);
    assert.equal(fake.authorizationOf(form.get("code")), authorization, "the code the provider's authorize page issued");
    return { request: calls[0]!, form };
  }

  it("Custom, with a nested user mapping, client_secret_post and PKCE: the client sees the mapped claims", async () => {
    const { authorization, idClaims, userinfo } = await signInWith("Nested IdP", custom);
    assert.equal(authorization.get("client_id"), FAKE_CLIENT.clientId);
    assert.equal(authorization.get("scope"), "openid profile email");
    assert.equal(authorization.get("code_challenge_method"), "S256");
    const { request, form } = tokenRequest(custom.requests, "/token", authorization, custom);
    assert.ok(pkceHolds(authorization, form.get("code_verifier")), "the verifier matches the challenge the provider saw");
    assert.equal(request.headers.authorization, undefined, "client_secret_post: no Basic header");
    assert.deepEqual([form.get("client_id"), form.get("client_secret")], [FAKE_CLIENT.clientId, FAKE_CLIENT.clientSecret]);
    assert.match(request.headers.accept ?? "", /application\/json/);
    const userinfoCall = custom.requests.find((r) => r.path === "/userinfo")!;
    assert.equal(userinfoCall.headers.authorization, `Bearer ${custom.issuedTokens.at(-1)}`);

    assert.deepEqual(
      { name: userinfo.name, preferred_username: userinfo.preferred_username, email: userinfo.email, picture: userinfo.picture, phone_number: userinfo.phone_number },
      { name: "Dana Nested", preferred_username: "dana", email: "dana@custom.example", picture: "https://custom.example/dana.png", phone_number: "+1 555 0199" },
    );
    assert.equal(idClaims.name, "Dana Nested");
    // The number id, as a string, keys the link.
    const link = await server.store.federatedIdentities.find({ provider: "custom", externalIdType: "sub", externalId: "4711" });
    assert.equal(link?.userId, userinfo.sub);
  });

  it("GitHub preset: credentials in the form and Accept: application/json at the token URL, the email from /user/emails", async () => {
    github.publicEmail = null;
    const { authorization, userinfo } = await signInWith("GitHub", github);
    assert.equal(authorization.get("client_id"), PRESET_CLIENT.clientId);
    assert.equal(authorization.get("scope"), "read:user user:email");
    const { request, form } = tokenRequest(github.requests, "/login/oauth/access_token", authorization, github);
    assert.match(request.headers.accept ?? "", /^application\/json/);
    assert.equal(request.headers.authorization, undefined);
    assert.deepEqual([form.get("client_id"), form.get("client_secret")], [PRESET_CLIENT.clientId, PRESET_CLIENT.clientSecret]);
    const apiCalls = github.requests.filter((r) => r.path.startsWith("/api/v3/"));
    assert.deepEqual(apiCalls.map((r) => r.path), ["/api/v3/user", "/api/v3/user/emails"]);
    for (const call of apiCalls) {
      assert.equal(call.headers.authorization, `Bearer ${github.tokens.at(-1)}`);
      assert.ok(call.headers["user-agent"], "GitHub's API refuses requests without a User-Agent");
    }
    assert.deepEqual(
      { name: userinfo.name, preferred_username: userinfo.preferred_username, email: userinfo.email, email_verified: userinfo.email_verified, picture: userinfo.picture },
      { name: "The Octocat", preferred_username: "octocat", email: "octocat@octo.example", email_verified: false, picture: "https://avatars.githubusercontent.com/u/583231?v=4" },
    );
    assert.ok(await server.store.federatedIdentities.find({ provider: "github", externalIdType: "sub", externalId: "583231" }));
  });

  it("Google preset: Basic at the token URL, Bearer at UserInfo, the email as user name and email_verified honoured", async () => {
    google.emailVerified = true;
    const { authorization, userinfo } = await signInWith("Google", google);
    assert.equal(authorization.get("scope"), "openid profile email");
    const { request, form } = tokenRequest(google.requests, "/token", authorization, google);
    assert.deepEqual(decodeBasic(request.headers.authorization), [PRESET_CLIENT.clientId, PRESET_CLIENT.clientSecret]);
    assert.equal(form.get("client_secret"), null, "the secret travels once, in the Basic header");
    assert.match(request.headers.accept ?? "", /application\/json/);
    assert.equal(google.requests.find((r) => r.path === "/v1/userinfo")?.headers.authorization, `Bearer ${google.tokens.at(-1)}`);
    assert.deepEqual(
      { name: userinfo.name, preferred_username: userinfo.preferred_username, email: userinfo.email, email_verified: userinfo.email_verified, picture: userinfo.picture },
      { name: "Grace Google", preferred_username: "grace@gmail.example", email: "grace@gmail.example", email_verified: true, picture: "https://lh3.googleusercontent.com/a/grace" },
    );
  });

  it("OIDC: discovery, PKCE and a nonce at the authorize page, Basic and the verifier at the token URL, a verified ID token", async () => {
    const { authorization, userinfo } = await signInWith("Acme OIDC", oidc);
    assert.equal(authorization.get("client_id"), OIDC_CLIENT.clientId);
    assert.equal(authorization.get("scope"), "openid profile email");
    assert.match(authorization.get("nonce") ?? "", /^[A-Za-z0-9_-]{43}$/);
    const { request, form } = tokenRequest(oidc.requests, "/token", authorization, oidc);
    assert.ok(pkceHolds(authorization, form.get("code_verifier")));
    assert.deepEqual(decodeBasic(request.headers.authorization), [OIDC_CLIENT.clientId, OIDC_CLIENT.clientSecret]);
    assert.match(request.headers.accept ?? "", /application\/json/);
    assert.ok(!oidc.requests.some((r) => r.path === "/userinfo"), "claims come from the ID token: this provider sets no userInfoUrl");
    assert.deepEqual(
      { name: userinfo.name, email: userinfo.email, email_verified: userinfo.email_verified },
      { name: "Olive OIDC", email: "oidc@example.com", email_verified: true },
    );
    const link = await server.store.federatedIdentities.find({ provider: "oidc", externalIdType: "sub", externalId: String(oidc.plan.claims.sub) });
    assert.equal(link?.userId, userinfo.sub);
  });

  /** After a refused sign-in: the browser is on our error page, and the client got nothing. */
  async function assertErrorPage(callsBefore: number, message: RegExp): Promise<string> {
    const { page } = chromium;
    await page.waitForURL((url) => url.href.startsWith(`${server.issuer}/callback`));
    const text = await page.locator("main").innerText();
    assert.match(text, message);
    assert.equal(callback.requests.length, callsBefore, "the client gets no code, nor any redirect");
    return text;
  }

  it("a mapping mismatch ends on an error page naming the provider and the field, and a warning without the token", async () => {
    const callsBefore = callback.requests.length;
    await pressProviderButton("Mismatched IdP");
    const text = await assertErrorPage(callsBefore, /Mismatched IdP sent no usable id \(account\.uuid is missing\)/);
    assert.doesNotMatch(text, /temporarily_unavailable/);
    const line = logs.lines.find((l) => l.message === "federated sign-in: the provider's answer lacks a mapped field");
    assert.equal(line?.level, "warn");
    assert.deepEqual([line?.fields?.provider, line?.fields?.field, line?.fields?.path], ["mismatch", "id", "account.uuid"]);
    assert.ok(custom.issuedTokens.length > 0);
    for (const token of custom.issuedTokens) assert.ok(!logs.text().includes(token), "no upstream token in the logs");
  });

  const REFUSALS: [string, () => Promise<void> | void, RegExp][] = [
    ["a bad signature", async () => void (oidc.plan.key = await newSigningKey(oidc.published[0]!.kid)), /ID token has a signature that does not verify/],
    ["a wrong aud", () => void (oidc.plan.aud = "someone-else"), /ID token is not valid: its aud claim/],
    ["a wrong nonce", () => void (oidc.plan.claims.nonce = "not-the-nonce-we-sent"), /ID token is not valid: its nonce claim does not match/],
    ["a wrong iss", () => void (oidc.plan.iss = "https://evil.example"), /ID token is not valid: its iss claim/],
    ["a callback whose iss parameter is another issuer (RFC 9207)", () => void (oidc.callbackIss = "https://evil.example"), /the answer names another issuer than Acme OIDC/],
  ];
  for (const [what, arrange, message] of REFUSALS) {
    it(`OIDC: ${what} ends on an error page naming the provider, and the client gets no code`, async () => {
      await arrange();
      const callsBefore = callback.requests.length;
      const usersBefore = (await server.domain.userAdmin.list()).length;
      await pressProviderButton("Acme OIDC");
      await assertErrorPage(callsBefore, new RegExp(`Acme OIDC[\\s\\S]*${message.source}`));
      assert.equal((await server.domain.userAdmin.list()).length, usersBefore, "no user made");
      assert.ok(!logs.text().includes(OIDC_ACCESS_TOKEN), "no upstream token in the logs");
    });
  }

  it("the login page shows each provider's favicon, and a favicon that fails to load leaves the name alone", async () => {
    const { page } = chromium;
    await openLoginPage();
    // Page-side code: the spec's tsconfig has no DOM types, hence the narrow shapes.
    type Img = { complete: boolean; naturalWidth: number; getBoundingClientRect(): { width: number; height: number } };
    await page.locator("button.provider img").evaluateAll((imgs) => Promise.all(imgs.map((img) => (img as unknown as { decode(): Promise<void> }).decode().catch(() => {}))));
    const icon = (label: string) =>
      page.getByRole("button", { name: `Sign in with ${label}` }).locator("img").evaluate((element) => {
        const img = element as unknown as Img;
        const box = img.getBoundingClientRect();
        return { loaded: img.complete && img.naturalWidth > 0, width: box.width, height: box.height };
      });
    assert.deepEqual(await icon("Nested IdP"), { loaded: true, width: 20, height: 20 });
    assert.deepEqual(await icon("Mismatched IdP"), { loaded: false, width: 0, height: 0 }, "no broken-image box");
    const broken = page.getByRole("button", { name: "Sign in with Mismatched IdP" });
    assert.ok(await broken.isVisible());
    assert.equal((await broken.innerText()).trim(), "Sign in with Mismatched IdP");
    assert.ok(custom.requests.some((r) => r.path === "/missing-favicon.ico"), "the browser did ask for the favicon");
    mkdirSync(SCREENSHOTS, { recursive: true });
    await page.screenshot({ path: `${SCREENSHOTS}/login-provider-buttons.png`, fullPage: true });
  });
});
