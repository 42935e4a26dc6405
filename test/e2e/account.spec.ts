import assert from "node:assert/strict";
import { SESSION_COOKIE } from "../../src/oauth/sessions.js";
import type { RunningServer } from "../../src/app/server.js";
import { FakeClock } from "../support/clock.js";
import { GrpcCaller, oauthErrorOf } from "../support/grpc.js";
import { getJson, passwordTokens } from "../support/oauth.js";
import { postForm, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

/** Casdoor's user object keys that get-account writes, and nothing else. */
const ACCOUNT_KEYS = [
  "id", "name", "displayName", "email", "emailVerified", "avatar", "phone", "address",
  "createdTime", "updatedTime", "isAdmin", "linkedIdentities", "properties",
].sort();

describe("get-account", () => {
  const clock = new FakeClock();
  let server: RunningServer;
  let sessionCookie: string;

  before(async () => {
    server = await startTestServer({ clock });
    const alice = await server.domain.userAdmin.get(TEST_USER.name);
    sessionCookie = `${SESSION_COOKIE}=${(await server.domain.sessions.create(alice)).cookie}`;
  });
  after(() => server.close());

  const account = (headers: Record<string, string>) => getJson(`${server.url}/api/get-account`, headers);

  function assertAlice(res: Awaited<ReturnType<typeof account>>) {
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(Object.keys(res.body).sort(), ["data", "msg", "status"]);
    assert.equal(res.body.status, "ok");
    assert.equal(res.body.msg, "");
    const user = res.body.data;
    assert.deepEqual(Object.keys(user).sort(), ACCOUNT_KEYS);
    assert.equal(user.name, TEST_USER.name);
    assert.equal(user.displayName, TEST_USER.displayName);
    assert.equal(user.email, TEST_USER.email);
    assert.equal(user.emailVerified, false);
    assert.equal(user.avatar, TEST_USER.avatar);
    assert.equal(user.phone, TEST_USER.phone);
    assert.deepEqual(user.address, [TEST_USER.address]);
    assert.equal(user.isAdmin, false);
    assert.deepEqual(user.linkedIdentities, []);
    assert.deepEqual(user.properties, {});
    assert.equal(user.createdTime, new Date(user.createdTime).toISOString(), "RFC 3339 time");
  }

  it("returns the session's user in Casdoor's envelope with camelCase keys", async () => {
    assertAlice(await account({ cookie: `theme=dark; ${sessionCookie}` }));
  });

  it("returns the Bearer token's user, the same object as for the session", async () => {
    // The whole account takes the account scope (test/hardening/scopeLimits.spec.ts).
    const tokens = await passwordTokens(server, { scope: "openid account" });
    const byToken = await account({ authorization: `Bearer ${tokens.access_token}` });
    assertAlice(byToken);
    assert.equal(byToken.text, (await account({ cookie: sessionCookie })).text);
  });

  it("never carries password hashes, secrets or tokens", async () => {
    const tokens = await passwordTokens(server);
    const res = await account({ authorization: `Bearer ${tokens.access_token}` });
    const stored = await server.domain.userAdmin.get(TEST_USER.name);
    for (const secret of [stored.passwordHash!, "scrypt$", TEST_USER.password, TEST_APP.clientSecret, tokens.access_token, tokens.refresh_token!]) {
      assert.ok(!res.text.includes(secret), `response must not contain ${secret.slice(0, 12)}...`);
    }
    assert.doesNotMatch(res.text, /password|secret|token|hash/i);
  });

  it("answers 401 with an error body when not signed in", async () => {
    const anonymous = await account({});
    assert.equal(anonymous.status, 401);
    assert.equal(anonymous.body.error, "login_required");
    assert.match(anonymous.headers.get("www-authenticate") ?? "", /^Bearer realm=/);

    const unknownSession = await account({ cookie: `${SESSION_COOKIE}=forged` });
    assert.equal(unknownSession.status, 401);
    assert.equal(unknownSession.body.error, "login_required");

    // A bad Bearer token decides alone, even next to a good session.
    const badToken = await account({ authorization: "Bearer nope", cookie: sessionCookie });
    assert.equal(badToken.status, 401);
    assert.equal(badToken.body.error, "invalid_token");
  });

  it("refuses a client_credentials token and an expired session", async () => {
    const cc = await postForm(`${server.url}/api/login/oauth/access_token`, {
      grant_type: "client_credentials",
      client_id: TEST_APP.clientId,
      client_secret: TEST_APP.clientSecret,
    });
    const res = await account({ authorization: `Bearer ${cc.body.access_token}` });
    assert.equal(res.status, 401);
    assert.match(res.body.error_description, /no user is bound/);

    clock.advanceSeconds(server.domain.sessions.ttlSeconds);
    assert.equal((await account({ cookie: sessionCookie })).status, 401);
  });

  it("serves GetAccount over gRPC with the token as authorization metadata", async () => {
    const grpc = new GrpcCaller(server.url);
    try {
      const tokens = await passwordTokens(server, { scope: "openid account" });
      const res = await grpc.call("IntrospectionService", "GetAccount", {}, { authorization: `Bearer ${tokens.access_token}` });
      assert.equal(res.status, "ok");
      assert.equal(res.data.name, TEST_USER.name);
      assert.equal(res.data.display_name, TEST_USER.displayName);
      await assert.rejects(grpc.call("IntrospectionService", "GetAccount", {}), (err) => oauthErrorOf(err) === "login_required");
    } finally {
      grpc.close();
    }
  });
});
