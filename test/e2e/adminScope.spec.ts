import { pauseNextCall } from "../support/pauseNextCall.js";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { ApplicationAdminService, KeyAdminService, UserAdminService } from "../../gen/identity/v1/admin_pb.js";
import { EventAdminService } from "../../gen/identity/v1/events_pb.js";
import { FederationService } from "../../gen/identity/v1/federation_pb.js";
import type { RunningServer } from "../../src/app/server.js";
import { openDb } from "../../src/store/db.js";
import { createStore } from "../../src/store/index.js";
import { authorizeUrl, browse, CookieJar } from "../support/browserless.js";
import { consoleSignIn } from "../support/consoleSignIn.js";
import { BACKENDS, describeEachDatabase } from "../support/databases.js";
import { passwordTokens, TOKEN_PATH } from "../support/oauth.js";
import { ADMIN_TOKEN, basicAuth, postForm, RecordingLogger, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

const ROOT = { name: "root", password: "pw-root-123456", displayName: "Root", isAdmin: true };
const CONSOLE_SCOPE = "openid profile identity:admin";

/** The code and message of a refused call. */
async function refusal(promise: Promise<unknown>): Promise<{ code: Code; message: string }> {
  return promise.then(
    () => assert.fail("the call must be refused"),
    (err: unknown) => {
      const e = ConnectError.from(err);
      return { code: e.code, message: e.rawMessage };
    },
  );
}

describeEachDatabase("admin scope: an admin user's access token opens the admin RPCs", (db) => {
  let server: RunningServer;
  let logger: RecordingLogger;
  let transports: Record<"connect" | "grpc", Transport>;
  const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });
  const adminToken = bearer(ADMIN_TOKEN);

  before(async () => {
    logger = new RecordingLogger();
    server = await startTestServer({
      database: db.url,
      logger,
      config: { applications: [TEST_APP], users: [TEST_USER, ROOT] },
    });
    transports = {
      connect: createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" }),
      grpc: createGrpcTransport({ baseUrl: server.url }),
    };
  });
  after(() => server?.close());

  it("creates the console's public client at start, hidden from and protected against administration", async () => {
    assert.deepEqual(server.domain.console, {
      clientId: "identity-console",
      redirectUri: `${server.issuer}/admin/`,
      scope: CONSOLE_SCOPE,
    });
    const app = await server.store.applications.findByClientId("identity-console");
    assert.deepEqual(app?.redirectUris, [`${server.issuer}/admin/`]);
    assert.deepEqual(app?.grantTypes, ["authorization_code"]);
    assert.equal(app?.publicClient, true);
    const apps = createClient(ApplicationAdminService, transports.connect);
    const listed = await apps.listApplications({}, adminToken);
    assert.deepEqual(listed.applications.map((a) => a.name), [TEST_APP.name], "the console's own application is not listed");
    for (const call of [
      apps.deleteApplication({ name: "identity-console" }, adminToken),
      apps.getApplication({ name: "identity-console" }, adminToken),
      apps.updateApplication({ application: { name: "identity-console", redirectUris: ["https://evil.example/cb"] } }, adminToken),
      apps.createApplication({ application: { name: "other", clientId: "identity-console" } }, adminToken),
    ]) {
      const refused = await refusal(call);
      assert.equal(refused.code, Code.InvalidArgument);
      assert.match(refused.message, /admin console's own application/);
    }
    assert.ok(await server.store.applications.findByName("identity-console"), "still there");
  });

  it("is a public client: no sign-in without PKCE, and no secret authenticates it", async () => {
    const { clientId, redirectUri, scope } = server.domain.console;
    const page = await browse(authorizeUrl(server.url, { client_id: clientId, redirect_uri: redirectUri, scope }), new CookieJar());
    const refused = new URL(page.headers.get("location") ?? "http://none/");
    assert.equal(refused.origin + refused.pathname, redirectUri);
    assert.equal(refused.searchParams.get("error"), "invalid_request");
    const guessed = await postForm(server.url + TOKEN_PATH, { grant_type: "authorization_code", code: "x", redirect_uri: redirectUri }, { authorization: basicAuth(clientId, "guessed-secret") });
    assert.equal(guessed.status, 401, JSON.stringify(guessed.body));
    assert.equal(guessed.body.error, "invalid_client");
  });

  it("grants identity:admin to an admin user signing in to the console, and the token works over Connect and gRPC", async () => {
    const tokens = await consoleSignIn(server, ROOT);
    assert.deepEqual(tokens.scope.split(" ").sort(), CONSOLE_SCOPE.split(" ").sort());
    for (const [door, transport] of Object.entries(transports)) {
      const users = await createClient(UserAdminService, transport).listUsers({}, bearer(tokens.access_token));
      assert.ok(users.users.some((u) => u.name === ROOT.name), door);
      const keys = await createClient(KeyAdminService, transport).listKeys({}, bearer(tokens.access_token));
      assert.ok(keys.keys.length > 0, door);
      const providers = await createClient(FederationService, transport).listProviders({}, bearer(tokens.access_token));
      assert.deepEqual(providers.providers, [], door);
      const events = await createClient(EventAdminService, transport).listEvents({}, bearer(tokens.access_token));
      assert.ok(Array.isArray(events.events), door); // the audit trail's service lets the admin user in too
    }
  });

  it("logs each admin change with the acting user", async () => {
    const tokens = await consoleSignIn(server, ROOT);
    const rootUser = (await server.store.users.findByName(ROOT.name))!;
    await createClient(UserAdminService, transports.connect).createUser({ user: { name: "made-by-root", password: "pw-made-123456" } }, bearer(tokens.access_token));
    await createClient(UserAdminService, transports.connect).deleteUser({ name: "made-by-root" }, adminToken);
    const lines = logger.lines.filter((l) => /UserAdminService\/(Create|Delete)User/.test(String(l.fields?.route)));
    assert.deepEqual(
      lines.map((l) => [l.fields?.route, l.fields?.admin_actor, l.fields?.admin_actor_id]),
      [
        ["connect:identity.v1.UserAdminService/CreateUser", ROOT.name, rootUser.id],
        ["connect:identity.v1.UserAdminService/DeleteUser", "admin", "admin"],
      ],
    );
  });

  it("does not grant identity:admin to a user who is not an admin", async () => {
    const tokens = await consoleSignIn(server, TEST_USER);
    assert.deepEqual(tokens.scope.split(" ").sort(), ["openid", "profile"]);
    const refused = await refusal(createClient(UserAdminService, transports.connect).listUsers({}, bearer(tokens.access_token)));
    assert.equal(refused.code, Code.PermissionDenied);
    assert.equal(refused.message, `not an administrator: ${TEST_USER.name}`);
  });

  it("does not grant identity:admin through any other application, even to an admin", async () => {
    const tokens = await passwordTokens(server, { user: ROOT, scope: CONSOLE_SCOPE });
    assert.deepEqual(tokens.scope.split(" ").sort(), ["openid", "profile"]);
    const only = await passwordTokens(server, { user: ROOT, scope: "identity:admin" });
    assert.equal(only.scope, "openid", "nothing grantable left is openid");
    const refused = await refusal(createClient(ApplicationAdminService, transports.grpc).listApplications({}, bearer(tokens.access_token)));
    assert.equal(refused.code, Code.PermissionDenied);
    assert.equal(refused.message, "the access token lacks the identity:admin scope", "an admin's token without the scope");

    // A client's own token never has it; nor does the console's client take a password.
    const cc = await postForm(server.url + TOKEN_PATH, { grant_type: "client_credentials", client_id: TEST_APP.clientId, client_secret: TEST_APP.clientSecret, scope: "identity:admin" });
    assert.equal(cc.status, 200);
    assert.ok(!(cc.body as { scope: string }).scope.split(" ").includes("identity:admin"), cc.text);
    const consolePassword = await postForm(server.url + TOKEN_PATH, { grant_type: "password", client_id: "identity-console", username: ROOT.name, password: ROOT.password, scope: CONSOLE_SCOPE });
    assert.ok(consolePassword.status >= 400 && consolePassword.status < 500, `the console's client takes no password grant: ${consolePassword.status}`);
    assert.ok(!consolePassword.text.includes("access_token"), consolePassword.text);
  });

  it("checks the user at every call: demoting, disabling or deleting them ends access at the next call", async () => {
    await server.domain.userAdmin.create({ name: "temp-admin", password: "pw-temp-123456", isAdmin: true });
    const { access_token } = await consoleSignIn(server, { name: "temp-admin", password: "pw-temp-123456" });
    const users = createClient(UserAdminService, transports.connect);
    const grpcUsers = createClient(UserAdminService, transports.grpc);
    await users.getUser({ name: "temp-admin" }, bearer(access_token));

    await users.updateUser({ user: { name: "temp-admin", isAdmin: false } }, adminToken);
    for (const client of [users, grpcUsers]) {
      const refused = await refusal(client.listUsers({}, bearer(access_token)));
      assert.equal(refused.code, Code.PermissionDenied);
      assert.match(refused.message, /^not an administrator/);
    }

    await users.updateUser({ user: { name: "temp-admin", isAdmin: true } }, adminToken);
    await users.listUsers({}, bearer(access_token));

    await users.updateUser({ user: { name: "temp-admin", disabled: true } }, adminToken);
    assert.equal((await refusal(users.listUsers({}, bearer(access_token)))).code, Code.Unauthenticated);

    await users.updateUser({ user: { name: "temp-admin", disabled: false } }, adminToken);
    await users.deleteUser({ name: "temp-admin" }, adminToken);
    assert.equal((await refusal(grpcUsers.listUsers({}, bearer(access_token)))).code, Code.Unauthenticated);
  });

  it("keeps a demotion and a disabling that land while an update of the same user is under way", async () => {
    await server.domain.userAdmin.create({ name: "raced-admin", password: "pw-raced-123456", isAdmin: true });
    const users = createClient(UserAdminService, transports.connect);
    const repo = server.store.users;
    const read = repo.findByName;
    try {
      for (const change of [{ isAdmin: false }, { disabled: true }]) {
        // The next read of the user (the update's) waits: the demotion or disabling lands between its read and its write.
        const { paused, release } = pauseNextCall(repo, "findByName");
        const update = users.updateUser({ user: { name: "raced-admin", displayName: "Raced" } }, adminToken);
        await paused;
        await users.updateUser({ user: { name: "raced-admin", ...change } }, adminToken);
        release();
        await update;
        const stored = (await read.call(repo, "raced-admin"))!;
        assert.equal(stored.displayName, "Raced");
        assert.deepEqual(Object.keys(change).map((k) => stored[k as keyof typeof change]), Object.values(change), JSON.stringify(change));
      }
    } finally {
      repo.findByName = read;
    }
    await users.deleteUser({ name: "raced-admin" }, adminToken);
  });

  it("still takes the admin token, and refuses a missing or wrong bearer as unauthenticated", async () => {
    const apps = createClient(ApplicationAdminService, transports.grpc);
    await apps.listApplications({}, adminToken);
    assert.equal((await refusal(apps.listApplications({}))).code, Code.Unauthenticated);
    assert.equal((await refusal(apps.listApplications({}, bearer("not-a-token")))).code, Code.Unauthenticated);
  });
});

describeEachDatabase("admin scope: the console client follows the issuer", (db) => {
  it("is created once, and its redirect URI follows a new issuer at the next start", async () => {
    const first = await startTestServer({ database: db.url, overrides: { issuer: "https://id-one.example" } });
    const made = await first.store.applications.findByClientId("identity-console");
    await first.close();
    assert.deepEqual(made?.redirectUris, ["https://id-one.example/admin/"]);

    const second = await startTestServer({ database: db.url, overrides: { issuer: "https://id-two.example/" } });
    try {
      assert.equal(second.domain.console.redirectUri, "https://id-two.example/admin/");
      const kept = await second.store.applications.findByClientId("identity-console");
      assert.deepEqual(kept?.redirectUris, ["https://id-two.example/admin/"]);
      assert.equal(kept?.id, made?.id, "the same application, updated");
      assert.notEqual(kept?.clientSecretHash, made?.clientSecretHash, "and a new unknown secret hash");
    } finally {
      await second.close();
    }
  });

  it("puts back a console application that was changed behind its back", async () => {
    const first = await startTestServer({ database: db.url });
    const made = (await first.store.applications.findByClientId("identity-console"))!;
    await first.store.applications.update({
      ...made,
      grantTypes: ["authorization_code", "password"],
      redirectUris: ["https://evil.example/cb"],
      refreshExpireInHours: 24,
      clientSecretHash: "scrypt$known",
    });
    await first.close();

    const second = await startTestServer({ database: db.url });
    try {
      const put = await second.store.applications.findByClientId("identity-console");
      assert.deepEqual(put?.grantTypes, ["authorization_code"]);
      assert.deepEqual(put?.redirectUris, [`${second.issuer}/admin/`]);
      assert.equal(put?.refreshExpireInHours, 0);
      assert.notEqual(put?.clientSecretHash, "scrypt$known");
    } finally {
      await second.close();
    }
  });

  it("refuses to start, naming both, when its name and its client id belong to two applications", async () => {
    const first = await startTestServer({ database: db.url });
    const made = (await first.store.applications.findByClientId("identity-console"))!;
    // Rows from before the console existed: one took its name, another its client id (the one that gets identity:admin).
    await first.store.applications.update({ ...made, clientId: "console-by-name" });
    await first.store.applications.insert({ ...made, id: randomUUID(), name: "by-client-id", redirectUris: ["https://evil.example/cb"] });
    await first.close();
    await assert.rejects(startTestServer({ database: db.url }), /identity-console.*two applications.*by-client-id/s);
    // Put the database back as the next tests expect it.
    const conn = await openDb({ url: db.url });
    try {
      await createStore(conn).applications.deleteByName("by-client-id");
    } finally {
      await conn.destroy();
    }
  });

  it("puts back its tokens' lifetime and kind too, when only they were changed", async () => {
    const first = await startTestServer({ database: db.url });
    const made = (await first.store.applications.findByClientId("identity-console"))!;
    await first.store.applications.update({ ...made, expireInHours: 8760, accessTokenStrategy: "opaque", signingAlg: "ES256", tokenFormat: "JWT" });
    await first.close();

    const second = await startTestServer({ database: db.url });
    try {
      const put = await second.store.applications.findByClientId("identity-console");
      // As docs/admin.md says: 1 hour, JWT, RS256.
      assert.deepEqual([put?.expireInHours, put?.accessTokenStrategy, put?.signingAlg, put?.tokenFormat], [1, "jwt", "RS256", "JWT-Standard"]);
    } finally {
      await second.close();
    }
  });
  // Each start on :memory: is a new database: nothing to find again.
}, BACKENDS.filter((b) => b.name !== "SQLite :memory:"));
