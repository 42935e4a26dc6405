import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { toJsonString } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { FederationService, ProviderSchema } from "../../gen/identity/v1/federation_pb.js";
import type { RunningServer } from "../../src/app/server.js";
import { ON_POSTGRES } from "../support/databases.js";
import { FAKE_CLIENT, FAKE_PROFILE, sendJsonBody, startFakeUpstream, type FakeUpstream } from "../support/fakeUpstream.js";
import { call, postJson } from "../support/oauth.js";
import { ADMIN_TOKEN, startTestServer } from "../support/server.js";

const SECRET_KEY = "federation-rpc-test-key-0123456789abcdef";

async function refusal(promise: Promise<unknown>): Promise<ConnectError> {
  return promise.then(
    () => assert.fail("the call must be refused"),
    (err: unknown) => ConnectError.from(err),
  );
}

describe("FederationService", () => {
  let fake: FakeUpstream;
  let server: RunningServer;
  let federation: Client<typeof FederationService>;
  const admin = { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } };

  before(async () => {
    fake = await startFakeUpstream();
    server = await startTestServer({ config: {}, overrides: { secretKey: SECRET_KEY } });
    federation = createClient(FederationService, createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" }));
  });
  after(async () => {
    await server?.close();
    await fake?.close();
  });
  beforeEach(() => fake.reset());

  const providerInput = (name: string, over: Record<string, unknown> = {}) => fake.provider(name, over) as { name: string };

  describe("provider management", () => {
    it("needs the admin token", async () => {
      assert.equal((await refusal(federation.listProviders({}))).code, Code.Unauthenticated);
      assert.equal((await refusal(federation.createProvider({ provider: providerInput("nope") }, { headers: { authorization: "Bearer x" } }))).code, Code.Unauthenticated);
      assert.equal((await server.domain.providerAdmin.list()).length, 0);
    });

    it("creates, reads, lists, updates and deletes; the client secret is never returned", async () => {
      const created = (await federation.createProvider({ provider: providerInput("crud", { trustEmail: true }) }, admin)).provider!;
      assert.equal(created.name, "crud");
      assert.equal(created.displayName, "Fake IdP");
      assert.equal(created.trustEmail, true);
      assert.equal(created.clientSecretEncrypted, true);
      assert.equal(created.userInfoUrl, `${fake.origin}/userinfo`);
      const shown = (await federation.getProvider({ name: "crud" }, admin)).provider!;
      const listed = (await federation.listProviders({}, admin)).providers;
      for (const message of [created, shown, ...listed]) {
        assert.ok(!toJsonString(ProviderSchema, message).includes(FAKE_CLIENT.clientSecret));
      }
      assert.deepEqual(listed.map((p) => p.name), ["crud"]);
      const stored = (await server.store.providers.findByName("crud"))!.clientSecret;
      assert.match(stored, /^aes256gcm:v1:/);

      // Only the fields sent change; the secret stays as stored.
      const updated = (await federation.updateProvider({ provider: { name: "crud", scope: "openid", displayName: "Crud" } }, admin)).provider!;
      assert.deepEqual([updated.scope, updated.displayName, updated.clientId, updated.trustEmail], ["openid", "Crud", FAKE_CLIENT.clientId, true]);
      assert.equal((await server.store.providers.findByName("crud"))!.clientSecret, stored);
      await federation.updateProvider({ provider: { name: "crud", clientSecret: "a new secret" } }, admin);
      assert.equal(server.domain.providerAdmin.clientSecret((await server.store.providers.findByName("crud"))!), "a new secret");

      await federation.deleteProvider({ name: "crud" }, admin);
      assert.equal((await refusal(federation.getProvider({ name: "crud" }, admin))).code, Code.NotFound);
      assert.equal((await refusal(federation.deleteProvider({ name: "crud" }, admin))).code, Code.NotFound);
    });

    it("refuses bad input naming the field, and a second provider of the same name", async () => {
      const cases: [Record<string, unknown>, RegExp][] = [
        [{ authUrl: "ftp://example.com/auth" }, /authUrl: must use http or https/],
        [{ tokenUrl: "/relative" }, /tokenUrl: is not an absolute URL/],
        [{ clientSecret: undefined }, /clientSecret: is required/],
        [{ scope: "" }, /scope: is required/],
        [{ type: "SAML" }, /type: must be "Custom" or "GitHub" or "Google" or "OIDC"/],
        [{ type: "OIDC" }, /issuer: is required for type OIDC/],
        [{ name: "with space" }, /name: must be/],
      ];
      for (const [over, message] of cases) {
        const err = await refusal(federation.createProvider({ provider: { ...providerInput("bad"), ...over } }, admin));
        assert.equal(err.code, Code.InvalidArgument);
        assert.match(err.rawMessage, message);
      }
      await federation.createProvider({ provider: providerInput("twice") }, admin);
      assert.equal((await refusal(federation.createProvider({ provider: providerInput("twice") }, admin))).code, Code.AlreadyExists);
      const badUpdate = await refusal(federation.updateProvider({ provider: { name: "twice", favicon: "nope" } }, admin));
      assert.match(badUpdate.rawMessage, /favicon: is not an absolute URL/);
    });

    it("carries the user mapping and the Custom options; URLs are https but on loopback or when allowed", async () => {
      const created = (
        await federation.createProvider(
          {
            provider: {
              ...providerInput("options"),
              userMapping: { id: "id", username: "login", displayName: "", avatarUrl: "avatar_url", email: "emails.0.value" },
              tokenAuthMethod: "client_secret_post",
              pkce: true,
              emailsUrl: "https://ghe.example/api/v3/user/emails",
            },
          },
          admin,
        )
      ).provider!;
      const { $typeName: _t, ...mapping } = created.userMapping!;
      assert.deepEqual(mapping, { id: "id", username: "login", displayName: "", email: "emails.0.value", avatarUrl: "avatar_url", phone: "" });
      assert.deepEqual(
        [created.tokenAuthMethod, created.pkce, created.allowInsecureUrls, created.emailsUrl],
        ["client_secret_post", true, false, "https://ghe.example/api/v3/user/emails"],
      );
      assert.deepEqual((await server.store.providers.findByName("options"))!.userMapping, { id: "id", username: "login", email: "emails.0.value", avatarUrl: "avatar_url" });
      const kept = (await federation.updateProvider({ provider: { name: "options", scope: "user" } }, admin)).provider!;
      assert.equal(kept.userMapping!.username, "login", "an update without a mapping keeps it");

      const cases: [Record<string, unknown>, RegExp][] = [
        [{ authUrl: "http://idp.example/auth" }, /authUrl: must use https \(http only on loopback addresses, or with allowInsecureUrls: true\)/],
        [{ userInfoUrl: "http://10.0.0.1/userinfo" }, /userInfoUrl: must use https/],
        [{ tokenAuthMethod: "none" }, /tokenAuthMethod: must be "client_secret_basic" or "client_secret_post"/],
        [{ userMapping: { id: "data..id" } }, /userMapping.id: must be names or indexes joined by dots/],
      ];
      for (const [over, message] of cases) {
        const err = await refusal(federation.createProvider({ provider: { ...providerInput("bad-option"), ...over } }, admin));
        assert.equal(err.code, Code.InvalidArgument);
        assert.match(err.rawMessage, message);
      }
      for (const [i, host] of ["localhost:8080", "127.0.0.2", "[::1]:9000"].entries()) {
        await federation.createProvider({ provider: providerInput(`loopback-${i}`, { tokenUrl: `http://${host}/token` }) }, admin);
      }
      const allowed = (await federation.createProvider({ provider: providerInput("insecure", { authUrl: "http://idp.example/auth", allowInsecureUrls: true }) }, admin)).provider!;
      assert.equal(allowed.allowInsecureUrls, true);
    });
  });

  describe("BeginLogin and CompleteLogin", () => {
    before(async () => {
      // The spec's shared /callback: CompleteLogin without a provider.
      await federation.createProvider({ provider: providerInput("rpc-fake", { sharedCallback: true }) }, admin);
    });

    it("run the round trip through the same domain code: state bound to the login secret, used once", async () => {
      const begun = await federation.beginLogin({ provider: "rpc-fake" });
      const authUrl = new URL(begun.authUrl);
      assert.equal(authUrl.searchParams.get("state"), begun.state);
      assert.equal(authUrl.searchParams.get("redirect_uri"), `${server.issuer}/callback`);
      assert.equal(authUrl.searchParams.get("client_id"), FAKE_CLIENT.clientId);
      assert.ok(!begun.authUrl.includes(begun.loginSecret), "the login secret never goes to the browser");
      assert.equal(begun.expiresIn, 600n);

      const wrongSecret = await refusal(federation.completeLogin({ state: begun.state, code: "c", loginSecret: "guess" }));
      assert.equal(wrongSecret.code, Code.InvalidArgument);
      assert.match(wrongSecret.rawMessage, /login_secret does not match/);
      assert.equal(fake.requests.length, 0, "nothing was called for the wrong secret");

      const done = await federation.completeLogin({ state: begun.state, code: "rpc-code", loginSecret: begun.loginSecret });
      assert.equal(done.created, true);
      assert.equal(done.user!.name, FAKE_PROFILE.preferred_username);
      assert.equal(done.user!.email, FAKE_PROFILE.email);
      const { provider, externalId, username } = done.identity!;
      assert.deepEqual([provider, externalId, username], ["rpc-fake", FAKE_PROFILE.sub, FAKE_PROFILE.preferred_username]);
      assert.deepEqual(done.user!.linkedIdentities.map((l) => l.provider), ["rpc-fake"]);
      assert.equal(new URLSearchParams(fake.requests[0]!.body).get("code"), "rpc-code");

      const replay = await refusal(federation.completeLogin({ state: begun.state, code: "rpc-code", loginSecret: begun.loginSecret }));
      assert.match(replay.rawMessage, /already completed/);

      const again = await federation.beginLogin({ provider: "rpc-fake" });
      const returning = await federation.completeLogin({ state: again.state, code: "c2", loginSecret: again.loginSecret });
      assert.equal(returning.created, false);
      assert.equal(returning.user!.id, done.user!.id);
    });

    it("refuse an unknown provider and a state begun in a browser", async () => {
      assert.equal((await refusal(federation.beginLogin({ provider: "nobody" }))).code, Code.NotFound);
      const browserState = await server.domain.federation.begin("rpc-fake", "csrf-token-of-a-browser", "pending-request-id");
      const err = await refusal(federation.completeLogin({ state: browserState.state, code: "c", loginSecret: "csrf-token-of-a-browser" }));
      assert.match(err.rawMessage, /belongs to a sign-in in a browser/);
    });

    it("report an upstream failure as Unavailable over gRPC, and create nothing", async () => {
      const grpc = createClient(FederationService, createGrpcTransport({ baseUrl: server.url }));
      const users = (await server.domain.userAdmin.list()).length;
      fake.token = (_q, res) => sendJsonBody(res, 503, {});
      const begun = await grpc.beginLogin({ provider: "rpc-fake" });
      const err = await refusal(grpc.completeLogin({ state: begun.state, code: "c", loginSecret: begun.loginSecret }));
      assert.equal(err.code, Code.Unavailable);
      assert.match(err.rawMessage, /could not be reached or its answer could not be used/);
      assert.equal((await server.domain.userAdmin.list()).length, users);
    });

    it("have REST paths that answer JSON, never cached", async () => {
      const begun = await postJson(`${server.url}/api/federation/begin-login`, { provider: "rpc-fake" });
      assert.equal(begun.status, 200);
      assert.equal(begun.headers.get("cache-control"), "no-store");
      assert.deepEqual(Object.keys(begun.body).sort(), ["auth_url", "expires_in", "login_secret", "state"]);
      fake.profile = { ...FAKE_PROFILE, sub: "rest-user", preferred_username: "rest-user" };
      const done = await postJson(`${server.url}/api/federation/complete-login`, {
        state: begun.body.state,
        code: "rest-code",
        login_secret: begun.body.login_secret,
      });
      assert.equal(done.status, 200, JSON.stringify(done.body));
      assert.equal(done.body.created, true);
      assert.equal(done.body.user.name, "rest-user");
      assert.deepEqual(done.body.identity, { provider: "rpc-fake", external_id: "rest-user", username: "rest-user" });

      const unknown = await call(`${server.url}/api/federation/complete-login`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ state: "nope", code: "c", login_secret: "s" }).toString(),
      });
      assert.equal(unknown.status, 400);
      assert.equal(unknown.body.error, "invalid_request");
    });

    it("deleting the provider unlinks its accounts, and keeps the users", async () => {
      await federation.createProvider({ provider: providerInput("short-lived") }, admin);
      fake.profile = { ...FAKE_PROFILE, sub: "short", preferred_username: "short" };
      const begun = await federation.beginLogin({ provider: "short-lived" });
      const { user } = await federation.completeLogin({ state: begun.state, code: "c", loginSecret: begun.loginSecret, provider: "short-lived" });
      await federation.deleteProvider({ name: "short-lived" }, admin);
      assert.deepEqual(await server.store.federatedIdentities.listByUser(user!.id), []);
      assert.ok(await server.store.users.findById(user!.id));
    });
  });
});

// IDENTITY_TEST_DATABASE=postgres runs the same race on PostgreSQL.
describe(`concurrent first sign-ins of one external account (${ON_POSTGRES ? "PostgreSQL" : "SQLite"})`, () => {
  let fake: FakeUpstream;
  let server: RunningServer;
  before(async () => {
    fake = await startFakeUpstream();
    server = await startTestServer({ config: { providers: [fake.provider("racy")] } });
  });
  after(async () => {
    await server?.close();
    await fake?.close();
  });

  it("create one user and one link; every sign-in gets that user", async () => {
    const federation = createClient(FederationService, createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" }));
    const n = randomBytes(4).toString("hex");
    fake.profile = { ...FAKE_PROFILE, sub: `racer-${n}`, preferred_username: `racer${n}` };
    const begun = await Promise.all(Array.from({ length: 10 }, () => federation.beginLogin({ provider: "racy" })));
    const done = await Promise.all(begun.map((b) => federation.completeLogin({ state: b.state, code: "c", loginSecret: b.loginSecret, provider: "racy" })));
    assert.equal(new Set(done.map((d) => d.user!.id)).size, 1);
    assert.equal(done.filter((d) => d.created).length, 1);
    assert.equal(done[0]!.user!.name, `racer${n}`);
    assert.equal((await server.domain.userAdmin.list()).filter((u) => u.name.startsWith(`racer${n}`)).length, 1);
  });
});
