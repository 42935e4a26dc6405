import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import type { RunningServer } from "../../src/app/server.js";
import { authorizeUrl, browse, CookieJar, loginFormFields, submit } from "../support/browserless.js";
import { startFakeOidc, type FakeOidc } from "../support/fakeOidc.js";
import { startFakeUpstream, type FakeUpstream } from "../support/fakeUpstream.js";
import { startTestServer, TEST_APP } from "../support/server.js";

interface DocConfig {
  providers: Record<string, unknown>[];
  applications: { name: string; providers: string[] }[];
}

/** The config file examples of docs/federation.md: its ```json blocks that have providers. */
function docConfigs(): DocConfig[] {
  const markdown = readFileSync("docs/federation.md", "utf8");
  return [...markdown.matchAll(/```json\n([\s\S]*?)```/g)].map(([, block]) => JSON.parse(block!) as DocConfig).filter((c) => Array.isArray(c.providers));
}

/**
 * The configs docs/federation.md shows, as an operator would paste them:
 * each loads, and each provider type signs a user in. Only the example hosts
 * are swapped for local fakes (the Custom provider's `https://id.acme.example/oauth`,
 * the OIDC issuer);
 * the presets keep their real hosts, so their buttons are checked to point
 * there.
 */
describe("docs/federation.md: every provider config it shows works", () => {
  let custom: FakeUpstream;
  let oidc: FakeOidc;
  let server: RunningServer;
  const configs = docConfigs();
  const providers = () => configs.flatMap((c) => c.providers);

  before(async () => {
    [custom, oidc] = await Promise.all([startFakeUpstream(), startFakeOidc()]);
    // Only the example hosts change: everything else is the documented text.
    const text = JSON.stringify(configs)
      .replaceAll("https://id.acme.example/oauth", custom.origin)
      .replaceAll("https://sso.corp.example/realms/main", oidc.origin);
    const local = JSON.parse(text) as DocConfig[];
    const names = [...new Set(local.flatMap((c) => c.applications.flatMap((a) => a.providers)))];
    server = await startTestServer({
      config: { applications: [{ ...TEST_APP, providers: names }], providers: local.flatMap((c) => c.providers) },
    });
  });
  after(async () => {
    await server?.close();
    await custom?.close();
    await oidc?.close();
  });

  it("shows a config for each provider type", () => {
    assert.deepEqual([...new Set(providers().map((p) => p.type))].sort(), ["Custom", "GitHub", "Google", "OIDC"]);
  });

  /** The login page, then the provider's button: where the browser is sent. */
  async function pressButton(name: string, jar: CookieJar): Promise<URL> {
    const page = await browse(authorizeUrl(server.url, { scope: "openid profile email" }), jar);
    const res = await submit(`${server.url}/login/oauth/provider/${name}`, loginFormFields(await page.text()), jar);
    assert.equal(res.status, 303);
    return new URL(res.headers.get("location")!);
  }

  /** The rest of the round trip: the fake's authorize page, our callback, the client's redirect URI with a code. */
  async function finish(authUrl: URL, jar: CookieJar): Promise<void> {
    const approved = await fetch(authUrl, { redirect: "manual" });
    assert.equal(approved.status, 302);
    const callback = await browse(approved.headers.get("location")!, jar);
    assert.equal(callback.status, 303, await callback.text());
    const back = new URL(callback.headers.get("location")!);
    assert.equal(`${back.origin}${back.pathname}`, TEST_APP.redirectUris[0]);
    assert.ok(back.searchParams.get("code"), "the client gets a code");
  }

  it("the Custom example (mapping, client_secret_post, PKCE) signs a user in", async () => {
    const acme = providers().find((p) => p.type === "Custom")!;
    custom.profile = { data: { user: { id: "docs-1", login: "docs-user" } }, emails: [{ value: "docs@acme.example" }] };
    const jar = new CookieJar();
    const authUrl = await pressButton(acme.name as string, jar);
    assert.equal(authUrl.searchParams.get("code_challenge_method"), "S256");
    await finish(authUrl, jar);
    const token = custom.requests.find((r) => r.path === "/token");
    assert.ok(token, "the documented token URL was called");
    assert.equal(new URLSearchParams(token.body).get("client_secret"), acme.clientSecret);
    const link = await server.store.federatedIdentities.find({ provider: acme.name as string, externalIdType: "sub", externalId: "docs-1" });
    const user = (await server.store.users.findById(link!.userId))!;
    assert.deepEqual([user.name, user.email], ["docs-user", "docs@acme.example"]);
  });

  it("the OIDC example signs a user in", async () => {
    const corp = providers().find((p) => p.type === "OIDC")!;
    oidc.client = { clientId: corp.clientId as string, clientSecret: corp.clientSecret as string };
    const jar = new CookieJar();
    await finish(await pressButton(corp.name as string, jar), jar);
    assert.ok(await server.store.federatedIdentities.find({ provider: corp.name as string, externalIdType: "sub", externalId: String(oidc.plan.claims.sub) }));
  });

  it("the GitHub and Google examples send the browser to GitHub and Google with their client ids", async () => {
    const expected: Record<string, string> = { GitHub: "https://github.com/login/oauth/authorize", Google: "https://accounts.google.com/o/oauth2/v2/auth" };
    for (const preset of providers().filter((p) => p.type === "GitHub" || p.type === "Google")) {
      const authUrl = await pressButton(preset.name as string, new CookieJar());
      assert.equal(`${authUrl.origin}${authUrl.pathname}`, expected[preset.type as string]);
      assert.equal(authUrl.searchParams.get("client_id"), preset.clientId);
    }
  });
});
