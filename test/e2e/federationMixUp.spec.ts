import assert from "node:assert/strict";
import type { RunningServer } from "../../src/app/server.js";
import { authorizeUrl, browse, CookieJar, loginFormFields, submit } from "../support/browserless.js";
import { startFakeOidc, type FakeOidc } from "../support/fakeOidc.js";
import { FAKE_PROFILE, sendJsonBody, startFakeProvider, startFakeUpstream, type FakeProvider, type FakeUpstream } from "../support/fakeUpstream.js";
import { postJson } from "../support/oauth.js";
import { RecordingLogger, startTestServer, TEST_APP } from "../support/server.js";

/**
 * A malicious provider (RFC 9700 §4.4): its authorize page sends the browser
 * on to `relayTo`, an honest provider's authorize URL taken from the
 * attacker's own sign-in, with the victim's state in place of the
 * attacker's (and, when told, its own redirect_uri); its token endpoint
 * notes every code it is sent.
 */
interface RelayingProvider extends FakeProvider {
  relayTo?: URL;
  ownRedirectUri: boolean;
  /** The codes our server sent to its token endpoint. */
  heardCodes: string[];
  /** A Custom provider entry for our config file that points here. */
  provider(name: string, over?: Record<string, unknown>): Record<string, unknown>;
}

async function startRelayingProvider(): Promise<RelayingProvider> {
  const relay = { heardCodes: [] as string[], ownRedirectUri: false } as RelayingProvider;
  const fake = await startFakeProvider(
    {
      "GET /.well-known/openid-configuration": (_req, res) =>
        sendJsonBody(res, 200, {
          issuer: relay.origin,
          authorization_endpoint: `${relay.origin}/authorize`,
          token_endpoint: `${relay.origin}/token`,
          jwks_uri: `${relay.origin}/jwks`,
          response_types_supported: ["code"],
        }),
      "GET /authorize": (req, res) => {
        const ours = new URL(req.url ?? "/", relay.origin).searchParams;
        const next = new URL(relay.relayTo!);
        next.searchParams.set("state", ours.get("state")!);
        if (relay.ownRedirectUri) next.searchParams.set("redirect_uri", ours.get("redirect_uri")!);
        res.writeHead(302, { location: next.href }).end();
      },
      "POST /token": (_req, res, body) => {
        relay.heardCodes.push(new URLSearchParams(body).get("code") ?? "");
        sendJsonBody(res, 400, { error: "invalid_grant" });
      },
    },
    // Its own approving page is never used: /authorize above relays.
    { authorizePath: "/unused" },
  );
  Object.assign(relay, fake);
  relay.provider = (name, over = {}) => ({
    name,
    type: "Custom",
    displayName: "Evil IdP",
    clientId: "ours at evil",
    clientSecret: "evil secret",
    authUrl: `${relay.origin}/authorize`,
    scope: "openid",
    tokenUrl: `${relay.origin}/token`,
    userInfoUrl: `${relay.origin}/userinfo`,
    favicon: `${relay.origin}/favicon.svg`,
    ...over,
  });
  return relay;
}

/** What the error page says when an answer comes back to another callback than its sign-in's. */
const MIX_UP = /the answer came back to another callback than/;

/** Follow a redirect the way a browser does, without cookies (the providers' pages set none). */
async function follow(url: URL | string): Promise<URL> {
  const res = await fetch(url, { redirect: "manual" });
  assert.equal(res.status, 302, `${url} redirects`);
  return new URL(res.headers.get("location")!);
}

describe("provider mix-up (RFC 9700 §4.4.2): a malicious provider relays a victim's sign-in to an honest one", () => {
  let honest: FakeUpstream;
  let evil: RelayingProvider;
  let honestOidc: FakeOidc;
  let evilOidc: RelayingProvider;
  let server: RunningServer;
  const logs = new RecordingLogger();

  before(async () => {
    [honest, evil, honestOidc, evilOidc] = await Promise.all([startFakeUpstream(), startRelayingProvider(), startFakeOidc(), startRelayingProvider()]);
    server = await startTestServer({
      logger: logs,
      config: {
        applications: [{ ...TEST_APP, providers: ["honest", "evil", "honest-oidc", "evil-oidc", "shared"] }],
        providers: [
          // PKCE on: the attack works all the same, since the code is redeemed with the attacker's own verifier.
          honest.provider("honest", { displayName: "Honest IdP", pkce: true }),
          evil.provider("evil"),
          // Shared callbacks: only the RFC 9207 iss tells their answers apart.
          { name: "honest-oidc", type: "OIDC", displayName: "Honest OIDC", clientId: "oidc-client", clientSecret: "oidc secret", issuer: honestOidc.origin, sharedCallback: true },
          { name: "evil-oidc", type: "OIDC", displayName: "Evil OIDC", clientId: "ours at evil", clientSecret: "evil secret", issuer: evilOidc.origin, sharedCallback: true },
          honest.provider("shared", { displayName: "Shared IdP", sharedCallback: true }),
        ],
      },
    });
  });
  after(async () => {
    await server?.close();
    await Promise.all([honest?.close(), evil?.close(), honestOidc?.close(), evilOidc?.close()]);
  });
  beforeEach(() => {
    honest.reset();
    honestOidc.reset();
    for (const relay of [evil, evilOidc]) {
      relay.heardCodes.length = 0;
      relay.ownRedirectUri = false;
    }
  });

  /** A browser opens the client's authorize request and presses a provider's button: where it is sent. */
  async function pressButton(provider: string, jar: CookieJar): Promise<URL> {
    const page = await browse(authorizeUrl(server.url, { scope: "openid" }), jar);
    const res = await submit(`${server.url}/login/oauth/provider/${provider}`, loginFormFields(await page.text()), jar);
    assert.equal(res.status, 303, await res.text());
    return new URL(res.headers.get("location")!);
  }

  /** The whole mix-up: the attacker begins with `honestName`, the victim with `evilName`; what the victim's browser got back. */
  async function relayVictim(honestName: string, evilName: string, relay: RelayingProvider) {
    const attacker = new CookieJar();
    const attackerAuthUrl = await pressButton(honestName, attacker);
    relay.relayTo = attackerAuthUrl;
    const victim = new CookieJar();
    const atEvil = await pressButton(evilName, victim);
    const atHonest = await follow(atEvil);
    assert.equal(atHonest.origin, attackerAuthUrl.origin, "the malicious provider sends the victim to the honest one");
    const backToUs = await follow(atHonest);
    const victimCallback = await browse(backToUs.href, victim);
    return { attacker, attackerAuthUrl, victimCallback, honestCode: backToUs.searchParams.get("code")! };
  }

  /** The attacker redeems a code in its own sign-in, at the callback that sign-in named: where its browser goes. */
  async function redeem(attacker: CookieJar, attackerAuthUrl: URL, code: string): Promise<Response> {
    const callback = new URL(attackerAuthUrl.searchParams.get("redirect_uri")!);
    callback.search = new URLSearchParams({ code, state: attackerAuthUrl.searchParams.get("state")! }).toString();
    return browse(callback.href, attacker);
  }

  /** An error page: no answer to the client. */
  async function assertRefused(res: Response, message: RegExp): Promise<void> {
    assert.equal(res.status, 400);
    assert.equal(res.headers.get("location"), null, "no redirect to the client");
    assert.match((await res.text()).replace(/&#(\d+);/g, (_, code: string) => String.fromCharCode(Number(code))), message);
  }

  const clientGotCode = (res: Response) => res.status === 303 && Boolean(new URL(res.headers.get("location")!).searchParams.get("code"));

  it("the malicious provider never hears the honest provider's code, and the attacker gets no sign-in as the victim", async () => {
    honest.profile = { ...FAKE_PROFILE, sub: "victim-admin", preferred_username: "victim-admin" };
    const { attacker, attackerAuthUrl, victimCallback, honestCode } = await relayVictim("honest", "evil", evil);
    for (const stolen of evil.heardCodes) {
      const res = await redeem(attacker, attackerAuthUrl, stolen);
      assert.ok(!clientGotCode(res), "the attacker was signed in as the victim with the honest provider's code");
    }
    assert.deepEqual(evil.heardCodes, [], "the honest provider's code went to the malicious provider");
    assert.ok(honestCode, "the honest provider answered");
    await assertRefused(victimCallback, MIX_UP);
    assert.equal(honest.requests.filter((r) => r.path === "/token").length, 0, "the code was sent nowhere");
    const warned = logs.lines.filter((l) => l.level === "warn" && /came back to another callback/.test(l.message));
    assert.deepEqual(warned.at(-1)?.fields, { provider: "evil", callback: "honest" });
    // One bounded label for every provider's callback.
    assert.ok(logs.lines.some((l) => l.message === "request" && l.fields?.route === "/callback/{name}"));
  });

  it("relayed with the malicious provider's own redirect URI, the honest provider's code does not redeem in the attacker's sign-in", async () => {
    evil.ownRedirectUri = true;
    honest.profile = { ...FAKE_PROFILE, sub: "victim-2", preferred_username: "victim-2" };
    const { attacker, attackerAuthUrl, honestCode } = await relayVictim("honest", "evil", evil);
    // The answer came back to evil's own callback, so evil hears the code, issued for evil's redirect URI.
    // (A real honest provider stops earlier: evil's callback is not a redirect URI registered there.)
    const res = await redeem(attacker, attackerAuthUrl, evil.heardCodes[0] ?? honestCode);
    assert.ok(!clientGotCode(res), "the attacker was signed in as the victim with the honest provider's code");
    assert.equal(res.status, 502);
    // Every failed provider call reads alike (issue 41 §3); the honest token endpoint refused the code.
    assert.match(await res.text(), /Honest IdP could not be reached or its answer could not be used/);
    assert.equal(honest.requests.filter((r) => r.path === "/token").length, 1);
    assert.ok(logs.lines.some((l) => l.level === "warn" && /400/.test(JSON.stringify(l.fields))), "the log says the token endpoint refused");
    assert.deepEqual(evil.heardCodes, [honestCode]);
  });

  it("with shared callbacks, an OIDC provider refuses an answer whose iss names another issuer (RFC 9207), before any token call", async () => {
    const { victimCallback, honestCode } = await relayVictim("honest-oidc", "evil-oidc", evilOidc);
    assert.ok(honestCode, "the honest provider answered, with its iss");
    assert.deepEqual(evilOidc.heardCodes, [], "the honest provider's code went to the malicious provider");
    await assertRefused(victimCallback, /names another issuer than Evil OIDC/);
    assert.equal(honestOidc.requests.filter((r) => r.path === "/token").length, 0);
  });

  describe("which callback an answer may come back to", () => {
    it("refuses at the shared /callback a state begun with a provider that has a callback of its own; nothing is called", async () => {
      const jar = new CookieJar();
      const authUrl = await pressButton("honest", jar);
      assert.equal(authUrl.searchParams.get("redirect_uri"), `${server.issuer}/callback/honest`);
      const res = await browse(`${server.url}/callback?${new URLSearchParams({ code: "c", state: authUrl.searchParams.get("state")! })}`, jar);
      await assertRefused(res, MIX_UP);
      assert.equal(honest.requests.length, 0);
    });

    it("serves a sharedCallback provider at /callback, and refuses its state at /callback/<name>", async () => {
      const jar = new CookieJar();
      const authUrl = await pressButton("shared", jar);
      assert.equal(authUrl.searchParams.get("redirect_uri"), `${server.issuer}/callback`);
      const state = authUrl.searchParams.get("state")!;
      const wrong = await browse(`${server.url}/callback/shared?${new URLSearchParams({ code: "c", state })}`, jar);
      await assertRefused(wrong, MIX_UP);
      assert.equal(honest.requests.length, 0);

      const again = await pressButton("shared", jar);
      const done = await browse((await follow(again)).href, jar);
      assert.ok(clientGotCode(done), `signed in through /callback (status ${done.status})`);
    });

    it("signs in through /callback/<name>, and passes a refusal on only from there", async () => {
      const jar = new CookieJar();
      const done = await browse((await follow(await pressButton("honest", jar))).href, jar);
      assert.ok(clientGotCode(done), `signed in (status ${done.status})`);
      const token = honest.requests.find((r) => r.path === "/token")!;
      assert.equal(new URLSearchParams(token.body).get("redirect_uri"), `${server.issuer}/callback/honest`);

      // An error answer with evil's state at honest's callback is a mix-up too: an error page, not an answer to the client.
      const victim = new CookieJar();
      const state = (await pressButton("evil", victim)).searchParams.get("state")!;
      const refused = await browse(`${server.url}/callback/honest?${new URLSearchParams({ error: "access_denied", state })}`, victim);
      await assertRefused(refused, MIX_UP);
    });
  });

  describe("FederationService.CompleteLogin", () => {
    const begin = async (provider: string) => {
      const begun = await postJson(`${server.url}/api/federation/begin-login`, { provider });
      assert.equal(begun.status, 200, JSON.stringify(begun.body));
      return { state: begun.body.state as string, login_secret: begun.body.login_secret as string, authUrl: new URL(begun.body.auth_url) };
    };

    it("refuses a state begun with the malicious provider when the callback was the honest one's, or the shared one; nothing is called", async () => {
      for (const callback of [{ provider: "honest" }, {}]) {
        const { state, login_secret, authUrl } = await begin("evil");
        assert.equal(authUrl.searchParams.get("redirect_uri"), `${server.issuer}/callback/evil`);
        const res = await postJson(`${server.url}/api/federation/complete-login`, { state, login_secret, code: "honest-code", ...callback });
        assert.equal(res.status, 403, JSON.stringify(res.body));
        assert.equal(res.body.error, "access_denied");
      }
      assert.deepEqual(evil.heardCodes, [], "the honest provider's code went to the malicious provider");
      assert.equal(honest.requests.length, 0);
    });

    it("completes with the provider whose callback the browser reached", async () => {
      honest.profile = { ...FAKE_PROFILE, sub: "rpc-mixup", preferred_username: "rpc-mixup" };
      const { state, login_secret } = await begin("honest");
      const res = await postJson(`${server.url}/api/federation/complete-login`, { state, login_secret, code: "c", provider: "honest" });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.identity.provider, "honest");
      assert.equal(new URLSearchParams(honest.requests.find((r) => r.path === "/token")!.body).get("redirect_uri"), `${server.issuer}/callback/honest`);
    });
  });
});
