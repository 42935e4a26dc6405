import assert from "node:assert/strict";
import * as oauth from "oauth4webapi";
import { SUPPORTED_SCOPES } from "../../src/oauth/scopes.js";
import type { RunningServer } from "../../src/app/server.js";
import { FakeClock } from "../support/clock.js";
import { GrpcCaller, oauthErrorOf } from "../support/grpc.js";
import { getJson, passwordTokens } from "../support/oauth.js";
import { startTestServer, TEST_APP, TEST_USER, minterOf } from "../support/server.js";

/** What each scope must release about TEST_USER, written out by hand (the spec's table, OIDC names). */
const RELEASED: Record<string, Record<string, unknown>> = {
  openid: {},
  profile: { name: TEST_USER.displayName, preferred_username: TEST_USER.name, picture: TEST_USER.avatar },
  email: { email: TEST_USER.email, email_verified: false },
  address: { address: { formatted: TEST_USER.address } },
  phone: { phone_number: TEST_USER.phone },
};

/** Every non-empty combination of the supported scopes. */
function combinations(scopes: readonly string[]): string[][] {
  return Array.from({ length: 2 ** scopes.length - 1 }, (_, i) => scopes.filter((_, bit) => ((i + 1) >> bit) & 1));
}

describe("userinfo", () => {
  const clock = new FakeClock();
  let server: RunningServer;
  let grpc: GrpcCaller;
  let aliceId: string;

  before(async () => {
    server = await startTestServer({ clock, config: { applications: [TEST_APP], users: [TEST_USER, { name: "bare", password: "pw-bare-12345" }] } });
    grpc = new GrpcCaller(server.url);
    aliceId = (await server.domain.userAdmin.get(TEST_USER.name)).id;
  });
  after(async () => {
    grpc.close();
    await server.close();
  });

  /** A token for `user` with exactly `scopes`, minted the way every grant mints (no password hashing per case). */
  async function tokenWith(scopes: string[], userName = TEST_USER.name, withUser = true): Promise<string> {
    const app = (await server.store.applications.findByClientId(TEST_APP.clientId))!;
    const user = withUser ? await server.domain.userAdmin.get(userName) : undefined;
    const tokens = await minterOf(server).mint({ app, user, scopes, idToken: false, refreshToken: false });
    return tokens.accessToken;
  }

  it("releases exactly the claims of every scope combination, over REST (both carriers) and gRPC", async () => {
    const cases = combinations(SUPPORTED_SCOPES);
    assert.equal(cases.length, 31);
    for (const scopes of cases) {
      const expected = Object.assign({ sub: aliceId, iss: server.issuer, aud: TEST_APP.clientId }, ...scopes.map((s) => RELEASED[s]));
      const token = await tokenWith(scopes);
      const label = scopes.join(" ");

      const byQuery = await getJson(`${server.url}/api/userinfo?accessToken=${encodeURIComponent(token)}`);
      assert.equal(byQuery.status, 200, label);
      assert.deepEqual(byQuery.body, expected, label);

      const byHeader = await getJson(`${server.url}/api/userinfo`, { authorization: `Bearer ${token}` });
      assert.equal(byHeader.text, byQuery.text, `${label}: both carriers give the same response`);

      const overGrpc = await grpc.call("IntrospectionService", "GetUserInfo", {}, { authorization: `Bearer ${token}` });
      assert.deepEqual({ ...overGrpc }, expected, `${label} over gRPC`);
    }
  });

  it("works with a strict client (oauth4webapi) and a token from the password grant", async () => {
    const tokens = await passwordTokens(server, { scope: "openid profile email" });
    const as: oauth.AuthorizationServer = { issuer: server.issuer, userinfo_endpoint: `${server.url}/api/userinfo` };
    const client: oauth.Client = { client_id: TEST_APP.clientId };
    const response = await oauth.userInfoRequest(as, client, tokens.access_token, { [oauth.allowInsecureRequests]: true });
    const claims = await oauth.processUserInfoResponse(as, client, aliceId, response);
    // What an upstream login provider must return (federation reads these four).
    assert.equal(claims.name, TEST_USER.displayName);
    assert.equal(claims.preferred_username, TEST_USER.name);
    assert.equal(claims.email, TEST_USER.email);
    assert.equal(claims.picture, TEST_USER.avatar);
  });

  it("leaves out claims the user has no value for", async () => {
    const bare = await server.domain.userAdmin.get("bare");
    const res = await getJson(`${server.url}/api/userinfo`, { authorization: `Bearer ${await tokenWith([...SUPPORTED_SCOPES], "bare")}` });
    assert.deepEqual(res.body, { sub: bare.id, iss: server.issuer, aud: TEST_APP.clientId, name: "bare", preferred_username: "bare" });
  });

  /** RFC 6750 §3: 401, a Bearer challenge naming invalid_token, and a JSON error body. */
  function assertInvalidToken(res: Awaited<ReturnType<typeof getJson>>, description: RegExp) {
    assert.equal(res.status, 401);
    assert.match(res.headers.get("www-authenticate") ?? "", /^Bearer .*error="invalid_token"/);
    assert.equal(res.body.error, "invalid_token");
    assert.match(res.body.error_description, description);
  }

  it("refuses a client_credentials token: no user is bound", async () => {
    const token = await tokenWith(["openid"], TEST_USER.name, false);
    assertInvalidToken(await getJson(`${server.url}/api/userinfo?accessToken=${token}`), /no user is bound/);
    await assert.rejects(
      grpc.call("IntrospectionService", "GetUserInfo", { access_token: token }),
      (err: { code: number }) => err.code === 16 && oauthErrorOf(err) === "invalid_token",
    );
  });

  it("refuses missing, unknown, forged and expired tokens with 401 invalid_token", async () => {
    assertInvalidToken(await getJson(`${server.url}/api/userinfo`), /required/);
    assertInvalidToken(await getJson(`${server.url}/api/userinfo?accessToken=nope`), /invalid, expired or revoked/);
    const token = await tokenWith(["openid"]);
    const [header, payload] = token.split(".");
    assertInvalidToken(await getJson(`${server.url}/api/userinfo?accessToken=${header}.${payload}.AAAA`), /invalid/);
    clock.advanceSeconds(TEST_APP.expireInHours * 3600);
    assertInvalidToken(await getJson(`${server.url}/api/userinfo`, { authorization: `Bearer ${token}` }), /expired/);
  });

  it("refuses a token sent both ways with 400 invalid_request", async () => {
    const token = await tokenWith(["openid"]);
    const res = await getJson(`${server.url}/api/userinfo?accessToken=${token}`, { authorization: `Bearer ${token}` });
    assert.equal(res.status, 400);
    assert.equal(res.body.error, "invalid_request");
  });

  it("refuses the token of a user disabled since", async () => {
    const token = await tokenWith(["openid"], "bare");
    await server.domain.userAdmin.update({ name: "bare", disabled: true });
    assertInvalidToken(await getJson(`${server.url}/api/userinfo?accessToken=${token}`), /disabled or deleted/);
  });
});
