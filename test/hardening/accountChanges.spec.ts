import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { ApplicationAdminService, UserAdminService } from "../../gen/identity/v1/admin_pb.js";
import { runAdminCommand } from "../../src/app/adminCommands.js";
import type { RunningServer } from "../../src/app/server.js";
import { SESSION_COOKIE } from "../../src/oauth/sessions.js";
import { APPLICATION_CACHE_MS } from "../../src/store/applications.js";
import { signIn as signInOnPage } from "../support/browserless.js";
import { BACKENDS, describeEachDatabase } from "../support/databases.js";
import { scaledMs } from "../support/deadline.js";
import { GrpcCaller, oauthErrorOf } from "../support/grpc.js";
import { startInstance, type Instance } from "../support/instances.js";
import { getJson, INTROSPECT_PATH, passwordTokens, type Reachable, type TestClient, type Tokens } from "../support/oauth.js";
import { ADMIN_TOKEN, basicAuth, postForm, startTestServer, TEST_APP, TEST_USER, writeConfigFile } from "../support/server.js";

/**
 * Issue 24, item 2: tokens must not outlive the account they belong to.
 * Disabling or deleting a user, or deleting an application, ends its tokens
 * at once, on every door; so does a password change, with the user's
 * browser sessions. Each case first uses the tokens on every door (so
 * whatever an instance keeps, the application cache and the rows kept while
 * a SQLite file is unchanged, is warm), then makes the change through the
 * admin API of the same instance and checks the very next requests.
 */

/** Every client here may refresh; the resource server only introspects. */
const APP = { ...TEST_APP, refreshExpireInHours: 24 };
const RESOURCE_SERVER = { name: "rs", clientId: "client-rs", clientSecret: "secret-of-the-resource-server", grantTypes: ["client_credentials"] };

/** What a sign-in left with the client and the browser. */
interface SignIn {
  userName: string;
  client: TestClient;
  tokens: Tokens;
  /** The browser session's Cookie header. */
  cookie: string;
  /** The authorization code that browser sign-in sent the client, not redeemed yet. */
  code: string;
}

/** One instance seen through every door that takes a token: REST and gRPC. */
class Doors {
  readonly grpc: GrpcCaller;

  constructor(readonly instance: Reachable) {
    this.grpc = new GrpcCaller(instance.url);
  }

  close(): void {
    this.grpc.close();
  }

  /** The token's introspection (by the resource server) over REST and gRPC: both must agree. */
  async active(token: string): Promise<boolean> {
    const rest = await postForm(
      this.instance.url + INTROSPECT_PATH,
      { token, token_type_hint: "access_token" },
      { authorization: basicAuth(RESOURCE_SERVER.clientId, RESOURCE_SERVER.clientSecret) },
    );
    assert.equal(rest.status, 200, rest.text);
    const grpc = await this.grpc.call(
      "IntrospectionService",
      "Introspect",
      { token, token_type_hint: "access_token" },
      { authorization: basicAuth(RESOURCE_SERVER.clientId, RESOURCE_SERVER.clientSecret) },
    );
    assert.equal(Boolean(grpc.active), rest.body.active, "gRPC and REST agree");
    if (!rest.body.active) assert.deepEqual(rest.body, { active: false });
    return rest.body.active;
  }

  /** Userinfo and get-account for the token, over REST and gRPC: the HTTP status (gRPC must agree). */
  async userStatus(token: string): Promise<{ userinfo: number; account: number }> {
    const bearer = { authorization: `Bearer ${token}` };
    const userinfo = await getJson(`${this.instance.url}/api/userinfo`, bearer);
    const account = await getJson(`${this.instance.url}/api/get-account`, bearer);
    for (const [res, method] of [[userinfo, "GetUserInfo"], [account, "GetAccount"]] as const) {
      const overGrpc = await this.grpc.call("IntrospectionService", method, {}, bearer).then(
        () => 200,
        (err: { code: number }) => {
          assert.equal(err.code, 16, `${method}: UNAUTHENTICATED`);
          assert.equal(oauthErrorOf(err), "invalid_token", method);
          return 401;
        },
      );
      assert.equal(overGrpc, res.status, `${method}: gRPC and REST agree (${res.text})`);
      if (res.status !== 200) {
        assert.equal(res.status, 401, res.text);
        assert.equal(res.body.error, "invalid_token");
        assert.match(res.headers.get("www-authenticate") ?? "", /^Bearer .*error="invalid_token"/);
      }
    }
    return { userinfo: userinfo.status, account: account.status };
  }

  /** get-account with the browser session: its HTTP status. */
  async sessionStatus(cookie: string): Promise<number> {
    return (await getJson(`${this.instance.url}/api/get-account`, { cookie })).status;
  }

  /** Refresh over REST, then over gRPC (each may consume the token): the two OAuth error codes, or "ok". */
  async refreshOutcome(refreshToken: string, client: TestClient): Promise<{ rest: string; grpc: string }> {
    const request = { grant_type: "refresh_token", refresh_token: refreshToken, client_id: client.clientId, client_secret: client.clientSecret };
    const rest = await postForm(`${this.instance.url}/api/login/oauth/refresh_token`, request);
    const grpc = await this.grpc.call("TokenService", "Refresh", request).then(
      () => "ok",
      (err) => oauthErrorOf(err) ?? String(err),
    );
    return { rest: rest.status === 200 ? "ok" : rest.body.error, grpc };
  }

  /** Everything a sign-in gave works, on every door. */
  async assertWorks(signIn: SignIn): Promise<void> {
    assert.equal(await this.active(signIn.tokens.access_token), true);
    assert.deepEqual(await this.userStatus(signIn.tokens.access_token), { userinfo: 200, account: 200 });
    assert.equal(await this.sessionStatus(signIn.cookie), 200);
  }

  /** The access token is over everywhere: introspection inactive, userinfo and get-account 401, REST and gRPC. */
  async assertAccessEnded(token: string): Promise<void> {
    assert.equal(await this.active(token), false, "introspection: inactive");
    assert.deepEqual(await this.userStatus(token), { userinfo: 401, account: 401 });
  }
}

/** The admin API of one instance (Connect over HTTP/1.1, with the admin token). */
function adminOf(instance: Reachable) {
  const transport = createConnectTransport({ baseUrl: instance.url, httpVersion: "1.1" });
  const headers = { authorization: `Bearer ${ADMIN_TOKEN}` };
  const users: Client<typeof UserAdminService> = createClient(UserAdminService, transport);
  const apps: Client<typeof ApplicationAdminService> = createClient(ApplicationAdminService, transport);
  return {
    createUser: (name: string, password: string) => users.createUser({ user: { name, password, displayName: name, email: `${name}@example.com` } }, { headers }),
    updateUser: (user: { name: string; password?: string; disabled?: boolean; displayName?: string }) => users.updateUser({ user }, { headers }),
    deleteUser: (name: string) => users.deleteUser({ name }, { headers }),
    createApp: (app: TestClient & { name: string }) =>
      apps.createApplication({ application: { ...app, grantTypes: ["password"], refreshExpireInHours: 24 } }, { headers }),
    deleteApp: (name: string) => apps.deleteApplication({ name }, { headers }),
  };
}

/** A new user (through the admin API), signed in with the password grant and in a browser session. */
async function signInNewUser(instance: Reachable, admin: ReturnType<typeof adminOf>, client: TestClient = APP): Promise<SignIn> {
  const userName = `user-${randomUUID().slice(0, 8)}`;
  const password = `pw-${randomUUID()}`;
  await admin.createUser(userName, password);
  const tokens = await passwordTokens(instance, { client, user: { name: userName, password }, scope: "openid profile" });
  assert.ok(tokens.refresh_token);
  return { userName, client, tokens, ...(await browserSignIn(instance, userName, password)) };
}

/** Sign in on the login page the way a browser does: the session's Cookie header, and the code sent to the client (APP). */
async function browserSignIn(instance: Reachable, userName: string, password: string): Promise<{ cookie: string; code: string }> {
  const { jar, location } = await signInOnPage(instance, {}, { username: userName, password });
  const value = jar.get(SESSION_COOKIE);
  assert.ok(value, "the sign-in left a session cookie");
  const code = location.searchParams.get("code");
  assert.ok(code, "the sign-in sent a code");
  return { cookie: `${SESSION_COOKIE}=${value}`, code };
}

/** Redeem the sign-in's code (APP, over REST): "ok" or the OAuth error. */
async function redeem(instance: Reachable, signIn: SignIn): Promise<string> {
  const res = await postForm(`${instance.url}/api/login/oauth/access_token`, {
    grant_type: "authorization_code", code: signIn.code, redirect_uri: APP.redirectUris[0]!, client_id: APP.clientId, client_secret: APP.clientSecret,
  });
  return res.status === 200 ? "ok" : res.body.error;
}

/** A fresh application (through the admin API) and a sign-in of a fresh user through it. */
async function signInThroughNewApp(instance: Reachable, admin: ReturnType<typeof adminOf>): Promise<SignIn & { appName: string }> {
  const suffix = randomUUID().slice(0, 8);
  const app = { name: `app-${suffix}`, clientId: `client-${suffix}`, clientSecret: `secret-${randomUUID()}` };
  await admin.createApp(app);
  return { ...(await signInNewUser(instance, admin, app)), appName: app.name };
}

describe("account changes end what they must", () => {
  let dir: string;
  let database: string;
  let server: RunningServer;
  let doors: Doors;
  let admin: ReturnType<typeof adminOf>;

  before(async () => {
    // A SQLite file: the instance keeps rows read from it while it is unchanged (src/store/rowReader.ts).
    dir = mkdtempSync(join(tmpdir(), "identity-account-changes-"));
    database = join(dir, "identity.sqlite");
    server = await startTestServer({ database, config: { applications: [APP, RESOURCE_SERVER], users: [TEST_USER] } });
    doors = new Doors(server);
    admin = adminOf(server);
  });
  after(async () => {
    doors?.close();
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  describe("tokens of a disabled user", () => {
    it("end at once on the instance that disabled the user: introspection inactive, userinfo and get-account 401, refresh invalid_grant, over REST and gRPC", async () => {
      const signIn = await signInNewUser(server, admin);
      await doors.assertWorks(signIn);
      await admin.updateUser({ name: signIn.userName, disabled: true });
      await doors.assertAccessEnded(signIn.tokens.access_token);
      assert.equal(await doors.sessionStatus(signIn.cookie), 401, "the browser session ended");
      assert.deepEqual(await doors.refreshOutcome(signIn.tokens.refresh_token!, APP), { rest: "invalid_grant", grpc: "invalid_grant" });
    });

    it("stay ended when the user is enabled again", async () => {
      const signIn = await signInNewUser(server, admin);
      await doors.assertWorks(signIn);
      await admin.updateUser({ name: signIn.userName, disabled: true });
      await admin.updateUser({ name: signIn.userName, disabled: false });
      await doors.assertAccessEnded(signIn.tokens.access_token);
      assert.equal(await redeem(server, signIn), "invalid_grant", "nor does the code of a sign-in before the disable");
      assert.equal(await doors.sessionStatus(signIn.cookie), 401);
      assert.deepEqual(await doors.refreshOutcome(signIn.tokens.refresh_token!, APP), { rest: "invalid_grant", grpc: "invalid_grant" });
    });
  });

  describe("tokens of a deleted user", () => {
    it("end at once on the instance that deleted the user: introspection inactive, userinfo and get-account 401, refresh invalid_grant, over REST and gRPC", async () => {
      const signIn = await signInNewUser(server, admin);
      await doors.assertWorks(signIn);
      await admin.deleteUser(signIn.userName);
      await doors.assertAccessEnded(signIn.tokens.access_token);
      assert.equal(await doors.sessionStatus(signIn.cookie), 401, "the browser session ended");
      assert.deepEqual(await doors.refreshOutcome(signIn.tokens.refresh_token!, APP), { rest: "invalid_grant", grpc: "invalid_grant" });
    });
  });

  describe("tokens of a deleted application", () => {
    it("end at once on the instance that deleted the application: introspection inactive, userinfo and get-account 401, over REST and gRPC; the client can refresh no more", async () => {
      const signIn = await signInThroughNewApp(server, admin);
      await doors.assertWorks(signIn);
      await admin.deleteApp(signIn.appName);
      await doors.assertAccessEnded(signIn.tokens.access_token);
      // The application is gone, so its client no longer authenticates.
      const refreshed = await doors.refreshOutcome(signIn.tokens.refresh_token!, signIn.client);
      assert.deepEqual(refreshed, { rest: "invalid_client", grpc: "invalid_client" });
    });

    it("stay ended when an application with the same client id and secret is created again", async () => {
      const signIn = await signInThroughNewApp(server, admin);
      await doors.assertWorks(signIn);
      await admin.deleteApp(signIn.appName);
      await admin.createApp({ name: signIn.appName, ...signIn.client });
      await doors.assertAccessEnded(signIn.tokens.access_token);
      assert.deepEqual(await doors.refreshOutcome(signIn.tokens.refresh_token!, signIn.client), { rest: "invalid_grant", grpc: "invalid_grant" });
    });
  });

  describe("a password change", () => {
    it("through the admin API ends the user's refresh and access tokens and browser sessions at once", async () => {
      const signIn = await signInNewUser(server, admin);
      await doors.assertWorks(signIn);
      await admin.updateUser({ name: signIn.userName, password: `pw-${randomUUID()}` });
      await doors.assertAccessEnded(signIn.tokens.access_token);
      assert.equal(await doors.sessionStatus(signIn.cookie), 401, "the browser session ended");
      assert.deepEqual(await doors.refreshOutcome(signIn.tokens.refresh_token!, APP), { rest: "invalid_grant", grpc: "invalid_grant" });
      assert.equal(await redeem(server, signIn), "invalid_grant", "the code of a sign-in with the old password mints nothing");
    });

    it("through the command line (identity user update --password) does the same", async () => {
      const signIn = await signInNewUser(server, admin);
      await doors.assertWorks(signIn);
      const newPassword = `pw-${randomUUID()}`;
      await runAdminCommand("user", ["update", "--name", signIn.userName, "--password", newPassword, "--database", database], {});
      assert.equal(await doors.sessionStatus(signIn.cookie), 401, "the browser session ended");
      assert.deepEqual(await doors.refreshOutcome(signIn.tokens.refresh_token!, APP), { rest: "invalid_grant", grpc: "invalid_grant" });
      assert.equal(await redeem(server, signIn), "invalid_grant");
      // Written by another process: the rows this instance kept are not what it answers from.
      await doors.assertAccessEnded(signIn.tokens.access_token);
      // The new password signs in, and what it gives works.
      const after = await passwordTokens(server, { user: { name: signIn.userName, password: newPassword } });
      assert.equal(await doors.active(after.access_token), true);
    });

    it("ends nothing when the password set is the one the user has (a config file applied again), nor when other fields change", async () => {
      const userName = `user-${randomUUID().slice(0, 8)}`;
      const password = `pw-${randomUUID()}`;
      await admin.createUser(userName, password);
      const tokens = await passwordTokens(server, { user: { name: userName, password } });
      const signIn: SignIn = { userName, client: APP, tokens, ...(await browserSignIn(server, userName, password)) };
      await admin.updateUser({ name: userName, password, displayName: "Renamed" });
      await doors.assertWorks(signIn);
      assert.equal(await redeem(server, signIn), "ok");
      assert.deepEqual(await doors.refreshOutcome(tokens.refresh_token!, APP), { rest: "ok", grpc: "invalid_grant" });
    });
  });
});

// Instances share a SQLite file on one machine and a PostgreSQL database across machines.
const SHARED_BACKENDS = BACKENDS.filter((backend) => backend.name !== "SQLite :memory:");
/** How soon a change made through one instance must hold on another, on an idle machine. */
const PROPAGATION_BOUND_MS = 2000;

describeEachDatabase(
  "account changes made through one instance, seen by another (real processes)",
  (ctx) => {
    let a: Instance;
    let b: Instance;
    let doorsOfB: Doors;
    let adminOfA: ReturnType<typeof adminOf>;

    before(async function () {
      this.timeout(60_000);
      const args = ["--database", ctx.url, "--config", writeConfigFile({ applications: [APP, RESOURCE_SERVER], users: [TEST_USER] }), "--admin-token", ADMIN_TOKEN];
      a = await startInstance(args);
      b = await startInstance(args);
      doorsOfB = new Doors(b);
      adminOfA = adminOf(a);
    });
    after(async () => {
      doorsOfB?.close();
      await Promise.all([a?.stop(), b?.stop()]);
    });

    /**
     * Wait until `ended` holds on B, at most the bound; returns how long it took. The bound is the
     * instances' cache bound plus the time to see it, which a loaded machine stretches.
     */
    async function within(ended: () => Promise<boolean>): Promise<number> {
      const boundMs = APPLICATION_CACHE_MS + scaledMs(PROPAGATION_BOUND_MS - APPLICATION_CACHE_MS);
      const start = Date.now();
      while (!(await ended())) {
        assert.ok(Date.now() - start < boundMs, `not ended on B within ${boundMs} ms:\n${b.stderr().slice(-3000)}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      return Date.now() - start;
    }

    const accessEnded = (token: string) => async () => {
      const { userinfo, account } = await doorsOfB.userStatus(token);
      return !(await doorsOfB.active(token)) && userinfo === 401 && account === 401;
    };

    it(`ends on B, within ${PROPAGATION_BOUND_MS} ms, the tokens of a user disabled through A`, async () => {
      const signIn = await signInNewUser(b, adminOfA);
      await doorsOfB.assertWorks(signIn);
      await adminOfA.updateUser({ name: signIn.userName, disabled: true });
      await within(accessEnded(signIn.tokens.access_token));
      assert.equal(await doorsOfB.sessionStatus(signIn.cookie), 401);
      assert.deepEqual(await doorsOfB.refreshOutcome(signIn.tokens.refresh_token!, APP), { rest: "invalid_grant", grpc: "invalid_grant" });
    });

    it(`ends on B, within ${PROPAGATION_BOUND_MS} ms, the tokens of a user deleted through A`, async () => {
      const signIn = await signInNewUser(b, adminOfA);
      await doorsOfB.assertWorks(signIn);
      await adminOfA.deleteUser(signIn.userName);
      await within(accessEnded(signIn.tokens.access_token));
      assert.equal(await doorsOfB.sessionStatus(signIn.cookie), 401);
      assert.deepEqual(await doorsOfB.refreshOutcome(signIn.tokens.refresh_token!, APP), { rest: "invalid_grant", grpc: "invalid_grant" });
    });

    it(`ends on B, within ${PROPAGATION_BOUND_MS} ms, the tokens of an application deleted through A`, async () => {
      const signIn = await signInThroughNewApp(b, adminOfA);
      await doorsOfB.assertWorks(signIn);
      await adminOfA.deleteApp(signIn.appName);
      await within(accessEnded(signIn.tokens.access_token));
      // B may still know the client for a moment (its application cache), never its tokens.
      await within(async () => {
        const { rest, grpc } = await doorsOfB.refreshOutcome(signIn.tokens.refresh_token!, signIn.client);
        assert.notEqual(rest, "ok", "no refresh for a deleted application");
        assert.notEqual(grpc, "ok", "no refresh for a deleted application");
        return rest === "invalid_client" && grpc === "invalid_client";
      });
    });

    it(`ends on B, within ${PROPAGATION_BOUND_MS} ms, the tokens and sessions of a user whose password changed through A`, async () => {
      const signIn = await signInNewUser(b, adminOfA);
      await doorsOfB.assertWorks(signIn);
      await adminOfA.updateUser({ name: signIn.userName, password: `pw-${randomUUID()}` });
      await within(accessEnded(signIn.tokens.access_token));
      assert.equal(await doorsOfB.sessionStatus(signIn.cookie), 401);
      assert.deepEqual(await doorsOfB.refreshOutcome(signIn.tokens.refresh_token!, APP), { rest: "invalid_grant", grpc: "invalid_grant" });
      assert.equal(await redeem(b, signIn), "invalid_grant");
    });
  },
  SHARED_BACKENDS,
);
