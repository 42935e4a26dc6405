import assert from "node:assert/strict";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { UserAdminService } from "../../gen/identity/v1/admin_pb.js";
import type { RunningServer } from "../../src/app/server.js";
import { ADMIN_SCOPE } from "../../src/oauth/scopes.js";
import { browse, CookieJar, loginFormFields, submit } from "../support/browserless.js";
import { consoleAuthorization, redeemConsoleCode } from "../support/consoleSignIn.js";
import { startFakeUpstream, type FakeUpstream } from "../support/fakeUpstream.js";
import type { Tokens } from "../support/oauth.js";
import { RecordingLogger, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

const SECRET_KEY = "console-providers-secret-key-0123456789";

/**
 * --console-providers: the console's sign-in page offers those providers
 * beside the password, so an admin who has no password (made by a first
 * sign-in through a provider, then promoted) reaches the console.
 */
describe("the console's sign-in through a login provider (--console-providers)", () => {
  let fake: FakeUpstream;
  let server: RunningServer;
  const logs = new RecordingLogger();

  before(async () => {
    fake = await startFakeUpstream();
    server = await startTestServer({
      logger: logs,
      config: {
        applications: [{ ...TEST_APP, providers: ["fake", "other"] }],
        users: [TEST_USER],
        providers: [fake.provider("fake"), fake.provider("other", { displayName: "Other IdP" })],
      },
      overrides: { secretKey: SECRET_KEY, consoleProviders: ["fake", "missing"] },
    });
  });
  after(async () => {
    await server?.close();
    await fake?.close();
  });

  /** The console's code + PKCE sign-in, through `provider`'s button; the token response. */
  async function consoleSignInThrough(provider: string): Promise<Tokens> {
    const { url, verifier } = consoleAuthorization(server);
    const jar = new CookieJar();
    const page = await browse(url, jar);
    assert.equal(page.status, 200);
    const pressed = await submit(`${server.url}/login/oauth/provider/${provider}`, loginFormFields(await page.text()), jar);
    assert.equal(pressed.status, 303);
    // The fake provider's authorize page approves at once and sends the browser to our /callback.
    const upstream = await browse(pressed.headers.get("location")!, jar);
    const callback = await browse(upstream.headers.get("location")!, jar);
    assert.equal(callback.status, 303, await callback.text());
    return redeemConsoleCode(server, new URL(callback.headers.get("location")!), verifier);
  }

  it("offers the listed providers on the console's login page, and only those", async () => {
    const page = await browse(consoleAuthorization(server).url, new CookieJar());
    const html = await page.text();
    assert.match(html, /\/login\/oauth\/provider\/fake/);
    assert.doesNotMatch(html, /\/login\/oauth\/provider\/other/);
    const refused = await submit(`${server.url}/login/oauth/provider/other`, loginFormFields(html), new CookieJar());
    assert.notEqual(refused.status, 303, "a provider the console does not offer starts no sign-in");
  });

  it("warns at start of a named provider that does not exist, and of no other", () => {
    const warned = logs.lines.filter((l) => l.level === "warn" && /--console-providers/.test(l.message));
    assert.deepEqual(warned.map((l) => l.fields?.provider), ["missing"]);
  });

  it("lets an admin with no password sign in to the console through a provider; a non-admin gets no admin scope", async () => {
    fake.profile = { ...fake.profile, sub: "console-admin-77", email: "ops@example.com", preferred_username: "ops" };
    const first = await consoleSignInThrough("fake");
    assert.ok(!first.scope.split(" ").includes(ADMIN_SCOPE), "a new user made by the sign-in is no admin");

    const link = await server.store.federatedIdentities.find({ provider: "fake", externalIdType: "sub", externalId: "console-admin-77" });
    assert.ok(link);
    const user = (await server.store.users.findById(link.userId))!;
    assert.equal(user.passwordHash, null, "signs in only through the provider");
    await server.domain.userAdmin.update({ name: user.name, isAdmin: true });

    const tokens = await consoleSignInThrough("fake");
    assert.ok(tokens.scope.split(" ").includes(ADMIN_SCOPE), tokens.scope);
    const users = createClient(UserAdminService, createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" }));
    const listed = await users.listUsers({}, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    assert.ok(listed.users.some((u) => u.name === user.name));
  });
});
