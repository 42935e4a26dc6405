import assert from "node:assert/strict";
import type { RunningServer } from "../../src/app/server.js";
import { authorizeUrl, browse, CookieJar, loginFormFields, submit } from "../support/browserless.js";
import { decodeBasic } from "../support/fakeUpstream.js";
import { PRESET_CLIENT as CLIENT, PRESET_CODE as CODE, startFakeGitHub, startFakeGoogle, type FakeGitHub, type FakeGoogle } from "../support/fakePresets.js";
import { startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

describe("GitHub and Google presets", () => {
  let gh: FakeGitHub;
  let gg: FakeGoogle;
  let server: RunningServer;

  before(async () => {
    gh = await startFakeGitHub();
    gg = await startFakeGoogle();
    server = await startTestServer({
      config: {
        applications: [{ ...TEST_APP, providers: ["github", "ghe", "google", "google-local"] }],
        users: [TEST_USER],
        providers: [
          // Only what an operator gives: the preset fills in the rest.
          { name: "github", type: "GitHub", ...CLIENT },
          { name: "google", type: "Google", ...CLIENT },
          // GitHub Enterprise style: the URL fields point the preset at another host.
          // These two return to the spec's shared /callback.
          { name: "ghe", type: "GitHub", ...CLIENT, ...gh.urls, sharedCallback: true },
          { name: "google-local", type: "Google", ...CLIENT, tokenUrl: gg.urls.tokenUrl, userInfoUrl: gg.urls.userInfoUrl, trustEmail: true, sharedCallback: true },
        ],
      },
    });
  });
  after(async () => {
    await server?.close();
    await gh?.close();
    await gg?.close();
  });
  beforeEach(() => {
    gh.requests.length = 0;
    gg.requests.length = 0;
  });

  async function pressButton(provider: string, jar = new CookieJar()) {
    const page = await browse(authorizeUrl(server.url, { scope: "openid profile email" }), jar);
    const html = await page.text();
    const res = await submit(`${server.url}/login/oauth/provider/${provider}`, loginFormFields(html), jar);
    assert.equal(res.status, 303);
    const authUrl = new URL(res.headers.get("location")!);
    return { jar, html, authUrl, state: authUrl.searchParams.get("state")! };
  }

  async function signIn(provider: string) {
    const { jar, state } = await pressButton(provider);
    const res = await browse(`${server.url}/callback?${new URLSearchParams({ code: CODE, state })}`, jar);
    assert.equal(res.status, 303, await res.text());
    const location = new URL(res.headers.get("location")!);
    assert.ok(location.searchParams.get("code"), "the client gets a code");
  }

  const linkedUser = async (provider: string, id: string) => {
    const link = await server.store.federatedIdentities.find({ provider, externalIdType: "sub", externalId: id });
    assert.ok(link, "linked by the provider's id");
    return (await server.store.users.findById(link.userId))!;
  };

  it("fill in the URLs, scope and favicon when the operator gives only client id and secret", async () => {
    const { authUrl, html } = await pressButton("github");
    assert.equal(`${authUrl.origin}${authUrl.pathname}`, "https://github.com/login/oauth/authorize");
    assert.equal(authUrl.searchParams.get("scope"), "read:user user:email");
    assert.equal(authUrl.searchParams.get("client_id"), CLIENT.clientId);
    assert.ok(html.includes("https://github.com/favicon.ico"));
    assert.ok(html.includes("https://www.google.com/favicon.ico"));
    const google = (await pressButton("google")).authUrl;
    assert.equal(`${google.origin}${google.pathname}`, "https://accounts.google.com/o/oauth2/v2/auth");
    assert.equal(google.searchParams.get("scope"), "openid profile email");
    // What is stored is what the operator gave; GetProvider shows no preset values.
    const stored = (await server.store.providers.findByName("github"))!;
    assert.deepEqual([stored.authUrl, stored.tokenUrl, stored.userMapping], ["", "", {}]);
  });

  it("GitHub: Accept: application/json and credentials in the form at the token URL; the primary verified email from /user/emails", async () => {
    gh.publicEmail = null;
    await signIn("ghe");
    const [token, user, emails, ...more] = gh.requests;
    assert.equal(more.length, 0);
    assert.equal(token!.path, "/login/oauth/access_token");
    assert.match(token!.headers.accept!, /^application\/json/);
    assert.equal(token!.headers.authorization, undefined);
    assert.deepEqual(Object.fromEntries(new URLSearchParams(token!.body)), {
      code: CODE,
      grant_type: "authorization_code",
      redirect_uri: `${server.issuer}/callback`,
      client_id: CLIENT.clientId,
      client_secret: CLIENT.clientSecret,
    });
    for (const call of [user!, emails!]) {
      assert.equal(call.headers.authorization, `Bearer ${gh.tokens.at(-1)}`);
      assert.ok(call.headers["user-agent"]);
    }
    assert.deepEqual([user!.path, emails!.path], ["/api/v3/user", "/api/v3/user/emails"]);
    const octocat = await linkedUser("ghe", "583231");
    assert.deepEqual(
      [octocat.name, octocat.displayName, octocat.email, octocat.avatar],
      ["octocat", "The Octocat", "octocat@octo.example", "https://avatars.githubusercontent.com/u/583231?v=4"],
    );
  });

  it("GitHub: a public email needs no second call", async () => {
    gh.publicEmail = "public@octo.example";
    await signIn("ghe");
    assert.deepEqual(gh.requests.map((r) => r.path), ["/login/oauth/access_token", "/api/v3/user"]);
  });

  it("Google: Basic at the token URL, Bearer at UserInfo, the email as user name, email_verified honoured", async () => {
    gg.emailVerified = false;
    await signIn("google-local");
    const [token, userinfo] = gg.requests;
    assert.deepEqual(decodeBasic(token!.headers.authorization), [CLIENT.clientId, CLIENT.clientSecret]);
    assert.deepEqual(Object.fromEntries(new URLSearchParams(token!.body)), { code: CODE, grant_type: "authorization_code", redirect_uri: `${server.issuer}/callback` });
    assert.equal(userinfo!.headers.authorization, `Bearer ${gg.tokens.at(-1)}`);
    const grace = await linkedUser("google-local", "110169484474386276334");
    assert.deepEqual(
      [grace.name, grace.displayName, grace.email, grace.emailVerified, grace.avatar],
      ["grace@gmail.example", "Grace Google", "grace@gmail.example", false, "https://lh3.googleusercontent.com/a/grace"],
    );
  });

  it("need only client id and secret; Custom still needs every URL", async () => {
    const admin = server.domain.providerAdmin;
    await assert.rejects(admin.create({ name: "half", type: "GitHub", clientId: "x" }), /clientSecret: is required for type GitHub/);
    await assert.rejects(admin.update({ name: "github", type: "Custom" }), /authUrl: is required for type Custom/);
  });
});
