import { pauseNextCall } from "../support/pauseNextCall.js";
import assert from "node:assert/strict";
import { toJsonString } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import {
  ApplicationAdminService,
  FieldViolationSchema,
  GetApplicationResponseSchema,
  ListApplicationsResponseSchema,
  ListUserSessionsResponseSchema,
  SessionAdminService,
  UserAdminService,
} from "../../gen/identity/v1/admin_pb.js";
import { FederationService, GetProviderResponseSchema, ListProvidersResponseSchema } from "../../gen/identity/v1/federation_pb.js";
import type { RunningServer } from "../../src/app/server.js";
import { SESSION_COOKIE } from "../../src/oauth/sessions.js";
import { authorizeUrl, browse, CookieJar } from "../support/browserless.js";
import { describeEachDatabase } from "../support/databases.js";
import { isActive, passwordTokens, refresh, TOKEN_PATH } from "../support/oauth.js";
import { ADMIN_TOKEN, basicAuth, postForm, startTestServer, TEST_APP, TEST_PROVIDER, TEST_USER } from "../support/server.js";

const admin = { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } };
const REFRESHING_APP = { ...TEST_APP, name: "refreshing", clientId: "client-refreshing", clientSecret: "secret-of-client-refreshing", refreshExpireInHours: 24 };

async function refused(promise: Promise<unknown>): Promise<ConnectError> {
  return promise.then(
    () => assert.fail("the call must be refused"),
    (err: unknown) => ConnectError.from(err),
  );
}

/** The field violations a refusal carries, as [field, description] pairs. */
const violations = (err: ConnectError) => err.findDetails(FieldViolationSchema).map((v) => [v.field, v.description]);

describeEachDatabase("admin contract for the console", (db) => {
  let server: RunningServer;
  let apps: Client<typeof ApplicationAdminService>;
  let users: Client<typeof UserAdminService>;
  let sessions: Client<typeof SessionAdminService>;
  let grpcSessions: Client<typeof SessionAdminService>;
  let providers: Client<typeof FederationService>;

  before(async () => {
    server = await startTestServer({
      database: db.url,
      config: { applications: [TEST_APP, REFRESHING_APP], users: [TEST_USER], providers: [TEST_PROVIDER] },
    });
    const transport = createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" });
    apps = createClient(ApplicationAdminService, transport);
    users = createClient(UserAdminService, transport);
    sessions = createClient(SessionAdminService, transport);
    grpcSessions = createClient(SessionAdminService, createGrpcTransport({ baseUrl: server.url }));
    providers = createClient(FederationService, transport);
  });
  after(() => server?.close());

  describe("applications: the client secret is shown once", () => {
    it("at creation and at rotation, never by get or list, and a rotation ends the old secret", async () => {
      const created = await apps.createApplication({ application: { name: "svc", grantTypes: ["client_credentials"] } }, admin);
      const clientId = created.application!.clientId;
      const cc = (secret: string) => postForm(server.url + TOKEN_PATH, { grant_type: "client_credentials" }, { authorization: basicAuth(clientId, secret) });
      assert.equal((await cc(created.clientSecret)).status, 200);

      const rotated = await apps.rotateApplicationSecret({ name: "svc" }, admin);
      assert.match(rotated.clientSecret, /^[A-Za-z0-9_-]{43}$/);
      assert.notEqual(rotated.clientSecret, created.clientSecret);
      assert.equal(rotated.application?.clientId, clientId);
      assert.equal((await cc(created.clientSecret)).status, 401, "the old secret is refused");
      assert.equal((await cc(rotated.clientSecret)).status, 200);

      const shown = [
        toJsonString(GetApplicationResponseSchema, await apps.getApplication({ name: "svc" }, admin)),
        toJsonString(ListApplicationsResponseSchema, await apps.listApplications({}, admin)),
      ].join("\n");
      for (const secret of [created.clientSecret, rotated.clientSecret]) assert.ok(!shown.includes(secret), shown);
      assert.equal((await refused(apps.rotateApplicationSecret({ name: "nope" }, admin))).code, Code.NotFound);
      await apps.deleteApplication({ name: "svc" }, admin);
    });

    it("a rotation and an update, or two updates, at the same time keep both: the old secret stays ended, each update's fields stay", async () => {
      const created = await apps.createApplication({ application: { name: "raced", grantTypes: ["client_credentials"], redirectUris: ["https://a.example/cb"] } }, admin);
      const clientId = created.application!.clientId;
      const cc = (secret: string) => postForm(server.url + TOKEN_PATH, { grant_type: "client_credentials" }, { authorization: basicAuth(clientId, secret) });
      const repo = server.store.applications;
      const read = repo.findByName;
      // The next read of the application waits until `release`: the call that made it is between its read and its write.
      const pauseNextRead = () => pauseNextCall(repo, "findByName");
      try {
        // An update read the row before the rotation and writes after it: the old secret must not come back.
        let pause = pauseNextRead();
        const update = apps.updateApplication({ application: { name: "raced", redirectUris: ["https://b.example/cb"] } }, admin);
        await pause.paused;
        const rotated = await apps.rotateApplicationSecret({ name: "raced" }, admin);
        pause.release();
        await update;
        assert.equal((await cc(created.clientSecret)).status, 401, "the rotated-away secret stays ended");
        assert.equal((await cc(rotated.clientSecret)).status, 200);

        // A rotation read the row before an update and writes after it: the update's change must not be undone.
        pause = pauseNextRead();
        const rotation = apps.rotateApplicationSecret({ name: "raced" }, admin);
        await pause.paused;
        await apps.updateApplication({ application: { name: "raced", redirectUris: ["https://c.example/cb"] } }, admin);
        pause.release();
        const second = await rotation;
        assert.deepEqual((await repo.findByName("raced"))?.redirectUris, ["https://c.example/cb"], "the update's redirect URIs stay");
        assert.equal((await cc(second.clientSecret)).status, 200);

        // Two updates of different fields: the one that read first does not write the other's field back.
        pause = pauseNextRead();
        const lifetime = apps.updateApplication({ application: { name: "raced", expireInHours: 5 } }, admin);
        await pause.paused;
        await apps.updateApplication({ application: { name: "raced", redirectUris: ["https://d.example/cb"] } }, admin);
        pause.release();
        await lifetime;
        const both = await repo.findByName("raced");
        assert.deepEqual([both?.redirectUris, both?.expireInHours], [["https://d.example/cb"], 5]);
      } finally {
        repo.findByName = read;
      }
      await apps.deleteApplication({ name: "raced" }, admin);
    });
  });

  describe("providers: the client secret is write-only", () => {
    it("is never returned, says whether one is set, and an update with it empty keeps it", async () => {
      const secret = "provider-secret-0123456789";
      const created = await providers.createProvider({ provider: { ...TEST_PROVIDER, name: "wo", clientSecret: secret } }, admin);
      assert.equal(created.provider?.clientSecretSet, true);
      const required = await refused(providers.createProvider({ provider: { ...TEST_PROVIDER, name: "wo-none", clientSecret: "" } }, admin));
      assert.deepEqual(violations(required), [["clientSecret", "is required"]], "a Custom provider needs one");

      const updated = await providers.updateProvider({ provider: { name: "wo", displayName: "Write Only", clientSecret: "" } }, admin);
      assert.equal(updated.provider?.displayName, "Write Only");
      assert.equal(updated.provider?.clientSecretSet, true);
      const stored = await server.domain.providerAdmin.get("wo");
      assert.equal(server.domain.providerAdmin.clientSecret(stored), secret, "the empty field kept the secret");

      const texts = [
        toJsonString(GetProviderResponseSchema, await providers.getProvider({ name: "wo" }, admin)),
        toJsonString(ListProvidersResponseSchema, await providers.listProviders({}, admin)),
      ];
      for (const text of texts) assert.ok(!text.includes(secret), text);
      assert.equal((await providers.getProvider({ name: "wo" }, admin)).provider?.clientSecretSet, true);

      const replaced = await providers.updateProvider({ provider: { name: "wo", clientSecret: "another-secret-9876543210" } }, admin);
      assert.equal(replaced.provider?.clientSecretSet, true);
      assert.equal(server.domain.providerAdmin.clientSecret(await server.domain.providerAdmin.get("wo")), "another-secret-9876543210");
      await providers.deleteProvider({ name: "wo" }, admin);
    });

    it("must be given again where it would go somewhere else: another token URL, type or issuer, or plain http allowed", async () => {
      const secret = "provider-secret-staying-0123456789";
      await providers.createProvider({ provider: { ...TEST_PROVIDER, name: "stays", tokenUrl: undefined, type: "GitHub", clientSecret: secret } }, admin);
      const elsewhere = "https://collector.example/token";
      const moves = [{ tokenUrl: elsewhere }, { type: "Custom", tokenUrl: TEST_PROVIDER.tokenUrl }, { allowInsecureUrls: true }];
      for (const move of moves) {
        for (const clientSecret of [undefined, ""]) {
          const err = await refused(providers.updateProvider({ provider: { name: "stays", ...move, clientSecret } }, admin));
          assert.deepEqual(violations(err).map(([f]) => f), ["clientSecret"], JSON.stringify(move));
        }
      }
      const kept = await server.domain.providerAdmin.get("stays");
      assert.deepEqual([kept.type, kept.tokenUrl, kept.allowInsecureUrls], ["GitHub", "", false], "nothing was changed");
      assert.equal(server.domain.providerAdmin.clientSecret(kept), secret);

      // The preset's own token URL written out is no move; a new secret with a move is taken.
      await providers.updateProvider({ provider: { name: "stays", tokenUrl: "https://github.com/login/oauth/access_token" } }, admin);
      const moved = await providers.updateProvider({ provider: { name: "stays", tokenUrl: elsewhere, clientSecret: "the-collector-secret-0123" } }, admin);
      assert.equal(moved.provider?.tokenUrl, elsewhere);
      await providers.updateProvider({ provider: { name: "stays", tokenUrl: elsewhere, displayName: "Stays" } }, admin);

      const oidc = { name: "stays-oidc", type: "OIDC", clientId: "c", clientSecret: secret, issuer: "https://sso.example" };
      await providers.createProvider({ provider: oidc }, admin);
      const err = await refused(providers.updateProvider({ provider: { name: "stays-oidc", issuer: "https://collector.example" } }, admin));
      assert.deepEqual(violations(err).map(([f]) => f), ["clientSecret"], "an OIDC provider's token endpoint is its issuer's");
      for (const name of ["stays", "stays-oidc"]) await providers.deleteProvider({ name }, admin);
    });

    it("two updates at the same time keep both: trustEmail turned off and a new secret are not written back", async () => {
      await providers.createProvider({ provider: { ...TEST_PROVIDER, name: "raced-idp", clientSecret: "first-secret-0123456789", trustEmail: true } }, admin);
      const repo = server.store.providers;
      const read = repo.findByName;
      try {
        // The display name's update reads first and writes last.
        const { paused, release } = pauseNextCall(repo, "findByName");
        const rename = providers.updateProvider({ provider: { name: "raced-idp", displayName: "Renamed" } }, admin);
        await paused;
        await providers.updateProvider({ provider: { name: "raced-idp", trustEmail: false, clientSecret: "second-secret-0123456789" } }, admin);
        release();
        await rename;
      } finally {
        repo.findByName = read;
      }
      const stored = await server.domain.providerAdmin.get("raced-idp");
      assert.deepEqual([stored.displayName, stored.trustEmail, server.domain.providerAdmin.clientSecret(stored)], ["Renamed", false, "second-secret-0123456789"]);
      await providers.deleteProvider({ name: "raced-idp" }, admin);
    });
  });

  describe("field errors name the field", () => {
    it("on a provider with a bad Auth URL, over Connect and gRPC", async () => {
      for (const client of [providers, createClient(FederationService, createGrpcTransport({ baseUrl: server.url }))]) {
        const err = await refused(client.createProvider({ provider: { ...TEST_PROVIDER, name: "bad", authUrl: "not a url" } }, admin));
        assert.equal(err.code, Code.InvalidArgument);
        const [[field, description]] = violations(err) as [[string, string]];
        assert.equal(field, "authUrl");
        assert.ok(description && !description.startsWith("authUrl"), description);
      }
    });

    it("on applications and users, with the contract's JSON names", async () => {
      const app = await refused(apps.createApplication({ application: { name: "x", redirectUris: ["ftp://nope"] } }, admin));
      assert.deepEqual(violations(app).map(([f]) => f), ["redirectUris"]);
      const user = await refused(users.createUser({ user: { name: "u", email: "not-an-email" } }, admin));
      assert.deepEqual(violations(user).map(([f]) => f), ["email"]);
      const name = await refused(users.createUser({ user: { name: "has space" } }, admin));
      assert.deepEqual(violations(name).map(([f]) => f), ["name"]);
      const notInput = await refused(apps.getApplication({ name: "missing" }, admin));
      assert.deepEqual(violations(notInput), [], "a refusal about no field names none");
    });

    it("name every bad field of one request, not only the first, over Connect and gRPC", async () => {
      for (const transport of [createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" }), createGrpcTransport({ baseUrl: server.url })]) {
        // A malformed URL, a clear-text one, missing fields and a bad mapping path, all in one provider.
        const provider = { name: "many-bad", type: "Custom", clientId: "c", clientSecret: "s", authUrl: "http://idp.example.com/a", scope: "openid",
          tokenUrl: "not a url", userMapping: { email: "a..b" } };
        const err = await refused(createClient(FederationService, transport).createProvider({ provider }, admin));
        assert.equal(err.code, Code.InvalidArgument);
        assert.deepEqual(violations(err).map(([f]) => f).sort(), ["authUrl", "favicon", "tokenUrl", "userInfoUrl", "userMapping.email"]);
        for (const [field, description] of violations(err)) assert.ok(err.rawMessage.includes(`${field}: ${description}`), err.rawMessage);

        const app = await refused(createClient(ApplicationAdminService, transport).createApplication(
          { application: { name: "many-bad", redirectUris: ["ftp://nope"], allowedOrigins: ["https://a.example/path"], expireInHours: -1, clientSecret: "short" } }, admin));
        assert.deepEqual(violations(app).map(([f]) => f), ["clientSecret", "redirectUris", "expireInHours", "allowedOrigins"]);
        const user = await refused(createClient(UserAdminService, transport).createUser({ user: { name: "has space", email: "not-an-email", password: "" } }, admin));
        assert.deepEqual(violations(user).map(([f]) => f), ["name", "password", "email"]);
      }
      assert.equal(await server.store.applications.findByName("many-bad"), undefined);
    });
  });

  describe("users: search and paging", () => {
    before(async () => {
      for (const [name, displayName, email] of [
        ["p-anna", "Anna Smith", "anna@one.example"],
        ["p-bob", "Bob Jones", "bob@two.example"],
        ["p-carl", "Carl Smith", "carl@one.example"],
        ["p-dora", "Dora 100%_Real", "dora@three.example"],
      ]) {
        await users.createUser({ user: { name, displayName, email } }, admin);
      }
    });

    it("searches name, display name and email, ignoring case, and wildcards are plain text", async () => {
      const names = async (search: string) => (await users.listUsers({ search }, admin)).users.map((u) => u.name);
      assert.deepEqual(await names("SMITH"), ["p-anna", "p-carl"]);
      assert.deepEqual(await names("one.example"), ["p-anna", "p-carl"]);
      assert.deepEqual(await names("p-b"), ["p-bob"]);
      assert.deepEqual(await names("%_"), ["p-dora"]);
      assert.deepEqual(await names("_"), ["p-dora"]);
      assert.deepEqual(await names("nobody"), []);
    });

    it("pages by name with a token, and counts every match", async () => {
      const seen: string[] = [];
      let pageToken = "";
      let pages = 0;
      do {
        const page = await users.listUsers({ search: "p-", pageSize: 3, pageToken }, admin);
        assert.equal(page.totalSize, 4);
        assert.ok(page.users.length <= 3);
        seen.push(...page.users.map((u) => u.name));
        pageToken = page.nextPageToken;
        pages++;
      } while (pageToken);
      assert.equal(pages, 2);
      assert.deepEqual(seen, ["p-anna", "p-bob", "p-carl", "p-dora"]);
      const all = await users.listUsers({}, admin);
      assert.equal(all.nextPageToken, "", "page_size 0 is every user at once");
      assert.equal(all.users.length, all.totalSize);
      const bad = await refused(users.listUsers({ pageToken: "!!" }, admin));
      assert.deepEqual(violations(bad).map(([f]) => f), ["pageToken"]);
      assert.deepEqual(violations(await refused(users.listUsers({ pageSize: 5000 }, admin))).map(([f]) => f), ["pageSize"]);
    });
  });

  describe("sessions: a user's browser sessions and refresh tokens", () => {
    const signInCookie = async () => {
      const user = (await server.store.users.findByName(TEST_USER.name))!;
      const jar = new CookieJar();
      jar.set(SESSION_COOKIE, (await server.domain.sessions.create(user)).cookie);
      return jar;
    };
    /** Whether the browser's session still signs it in: authorize answers with a redirect, not the login page. */
    const signedIn = async (jar: CookieJar) => (await browse(authorizeUrl(server.url), jar)).status !== 200;

    it("lists them without secrets, revokes each one, and then all", async () => {
      const [first, second] = [await signInCookie(), await signInCookie()];
      const tokens = await passwordTokens(server, { client: REFRESHING_APP });
      const other = await passwordTokens(server, { client: REFRESHING_APP });
      assert.ok(tokens.refresh_token && other.refresh_token);

      const listed = await sessions.listUserSessions({ user: TEST_USER.name }, admin);
      assert.equal(listed.sessions.length, 2);
      assert.equal(listed.refreshTokens.length, 2);
      const text = toJsonString(ListUserSessionsResponseSchema, listed);
      for (const secret of [first.get(SESSION_COOKIE)!, second.get(SESSION_COOKIE)!, tokens.refresh_token!, other.refresh_token!, tokens.access_token]) {
        assert.ok(!text.includes(secret), "no secret in the listing");
      }
      const grant = listed.refreshTokens[0]!;
      assert.equal(grant.clientId, REFRESHING_APP.clientId);
      assert.equal(grant.application, REFRESHING_APP.name);
      assert.ok(grant.expireTime > grant.issuedTime && grant.issuedTime > 0n);

      // One session: that browser must sign in again, the other stays.
      assert.ok((await signedIn(first)) && (await signedIn(second)));
      const target = listed.sessions[0]!;
      assert.ok(target.expireTime > target.createdTime && target.authTime > 0n);
      await sessions.revokeSession({ user: TEST_USER.name, sessionId: target.id }, admin);
      const endedOne = [await signedIn(first), await signedIn(second)];
      assert.equal(endedOne.filter(Boolean).length, 1, "exactly one session ended");
      assert.equal((await refused(sessions.revokeSession({ user: TEST_USER.name, sessionId: target.id }, admin))).code, Code.NotFound);

      // One refresh token, over gRPC: it and its access token end, the other grant stays.
      const revokedGrant = listed.refreshTokens.find((g) => g.id)!;
      await grpcSessions.revokeRefreshToken({ user: TEST_USER.name, refreshTokenId: revokedGrant.id }, admin);
      const results = await Promise.all([refresh(server, tokens.refresh_token!, {}, REFRESHING_APP), refresh(server, other.refresh_token!, {}, REFRESHING_APP)]);
      assert.deepEqual(results.map((r) => r.status).sort(), [200, 400], "one grant revoked, one alive");
      assert.equal((await sessions.listUserSessions({ user: TEST_USER.name }, admin)).refreshTokens.length, 1);

      // Everything else.
      const all = await sessions.revokeAllUserSessions({ user: TEST_USER.name }, admin);
      assert.deepEqual([all.sessionsRevoked, all.refreshTokensRevoked], [1, 1]);
      assert.deepEqual(await sessions.listUserSessions({ user: TEST_USER.name }, admin).then((l) => [l.sessions.length, l.refreshTokens.length]), [0, 0]);
      assert.ok(!(await signedIn(first)) && !(await signedIn(second)));
      assert.equal(await isActive(server, other.access_token, REFRESHING_APP), false, "access tokens end with them");
    });

    it("refuses an unknown user or id, and a caller without admin rights", async () => {
      assert.equal((await refused(sessions.listUserSessions({ user: "nobody" }, admin))).code, Code.NotFound);
      assert.equal((await refused(sessions.revokeRefreshToken({ user: TEST_USER.name, refreshTokenId: "nope" }, admin))).code, Code.NotFound);
      assert.equal((await refused(sessions.listUserSessions({ user: TEST_USER.name }))).code, Code.Unauthenticated);
    });
  });
});
