import assert from "node:assert/strict";
import type { RunningServer } from "../../src/app/server.js";
import { SESSION_COOKIE } from "../../src/oauth/sessions.js";
import { GrpcCaller } from "../support/grpc.js";
import { getJson, INTROSPECT_PATH, passwordTokens } from "../support/oauth.js";
import { basicAuth, postForm, startTestServer, TEST_APP, TEST_USER, minterOf } from "../support/server.js";

/**
 * Issue 24, item 6: scopes are limits. A token releases what its scopes
 * name, at get-account as at userinfo; the whole account takes the browser
 * session or the `account` scope. The expectations are written out by hand
 * from the table in docs/tokens.md.
 */

/** A user with a value in every field, so that a withheld field shows. */
const USER = { ...TEST_USER, name: "dora", password: "pw-dora-12345", emailVerified: true, isAdmin: true };

/** What a withheld field reads as: get-account always carries every key (Casdoor's shape), empty. */
const EMPTY = {
  name: "", displayName: "", email: "", emailVerified: false, avatar: "", phone: "", address: [],
  createdTime: "", updatedTime: "", isAdmin: false, linkedIdentities: [], properties: {},
};

/** The get-account fields each scope unlocks, by hand (docs/tokens.md). `id` is always there, as userinfo's `sub`. */
const ACCOUNT_FIELDS: Record<string, string[]> = {
  openid: [],
  profile: ["name", "displayName", "avatar"],
  email: ["email", "emailVerified"],
  address: ["address"],
  phone: ["phone"],
  account: Object.keys(EMPTY),
};

/** The userinfo claims each scope releases (OIDC names), by hand. */
const USERINFO_CLAIMS: Record<string, Record<string, unknown>> = {
  openid: {},
  profile: { name: USER.displayName, preferred_username: USER.name, picture: USER.avatar },
  email: { email: USER.email, email_verified: true },
  address: { address: { formatted: USER.address } },
  phone: { phone_number: USER.phone },
};
USERINFO_CLAIMS.account = Object.assign({}, ...Object.values(USERINFO_CLAIMS));

const SCOPES = Object.keys(ACCOUNT_FIELDS);

/** Every non-empty combination of the scopes. */
function combinations(scopes: readonly string[]): string[][] {
  return Array.from({ length: 2 ** scopes.length - 1 }, (_, i) => scopes.filter((_, bit) => ((i + 1) >> bit) & 1));
}

describe("a token's scope limits get-account", () => {
  let server: RunningServer;
  let grpc: GrpcCaller;
  let full: Record<string, unknown>;
  let sessionCookie: string;

  before(async () => {
    server = await startTestServer({ config: { applications: [TEST_APP], users: [USER] } });
    grpc = new GrpcCaller(server.url);
    const dora = await server.domain.userAdmin.get(USER.name);
    sessionCookie = `${SESSION_COOKIE}=${(await server.domain.sessions.create(dora)).cookie}`;
    full = (await getJson(`${server.url}/api/get-account`, { cookie: sessionCookie })).body.data;
  });
  after(async () => {
    grpc.close();
    await server.close();
  });

  /** A token for USER with exactly `scopes`, minted the way every grant mints. */
  async function tokenWith(scopes: string[]): Promise<string> {
    const app = (await server.store.applications.findByClientId(TEST_APP.clientId))!;
    const user = await server.domain.userAdmin.get(USER.name);
    return (await minterOf(server).mint({ app, user, scopes, idToken: false, refreshToken: false })).accessToken;
  }

  /** What get-account must answer for `scopes`: the id, the unlocked fields as the session sees them, the rest empty. */
  function expectedAccount(scopes: string[]): Record<string, unknown> {
    const unlocked = new Set(scopes.flatMap((s) => ACCOUNT_FIELDS[s]!));
    return { ...EMPTY, ...Object.fromEntries(Object.entries(full).filter(([field]) => field === "id" || unlocked.has(field))) };
  }

  it("gives the browser session the whole account", () => {
    assert.equal(full.name, USER.name);
    assert.equal(full.isAdmin, true);
    assert.equal(full.emailVerified, true);
    assert.notEqual(full.createdTime, "");
  });

  it("gives a token of scope openid the account's id and nothing else, over REST and gRPC", async () => {
    const token = await tokenWith(["openid"]);
    const res = await getJson(`${server.url}/api/get-account`, { authorization: `Bearer ${token}` });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body.data, { ...EMPTY, id: full.id });
    const overGrpc = await grpc.call("IntrospectionService", "GetAccount", {}, { authorization: `Bearer ${token}` });
    assert.equal(overGrpc.data.id, full.id);
    for (const field of ["name", "display_name", "email", "avatar", "phone", "created_time"]) assert.ok(!overGrpc.data[field], field);
    assert.ok(!overGrpc.data.is_admin);
    assert.ok(!overGrpc.data.email_verified);
    assert.deepEqual(overGrpc.data.address ?? [], []);
  });

  it("gives the whole account, as the session sees it, to a token of scope account, over REST and gRPC", async () => {
    const token = await tokenWith(["openid", "account"]);
    const res = await getJson(`${server.url}/api/get-account`, { authorization: `Bearer ${token}` });
    assert.deepEqual(res.body.data, full);
    const overGrpc = await grpc.call("IntrospectionService", "GetAccount", {}, { authorization: `Bearer ${token}` });
    assert.equal(overGrpc.data.is_admin, true);
    assert.equal(overGrpc.data.created_time, full.createdTime);
  });

  it("releases exactly the fields of every scope combination at get-account, and the same scopes' claims at userinfo", async () => {
    const cases = combinations(SCOPES);
    assert.equal(cases.length, 63);
    for (const scopes of cases) {
      const label = scopes.join(" ");
      const bearer = { authorization: `Bearer ${await tokenWith(scopes)}` };
      const account = await getJson(`${server.url}/api/get-account`, bearer);
      assert.equal(account.status, 200, label);
      assert.deepEqual(account.body.data, expectedAccount(scopes), label);
      const userinfo = await getJson(`${server.url}/api/userinfo`, bearer);
      const claims = Object.assign({ sub: full.id, iss: server.issuer, aud: TEST_APP.clientId }, ...scopes.map((s) => USERINFO_CLAIMS[s]));
      assert.deepEqual(userinfo.body, claims, label);
    }
  });

  it("is granted like any scope: asked for at the token endpoint, listed in discovery", async () => {
    const tokens = await passwordTokens(server, { user: USER, scope: "openid account" });
    assert.equal(tokens.scope, "openid account");
    const res = await getJson(`${server.url}/api/get-account`, { authorization: `Bearer ${tokens.access_token}` });
    assert.deepEqual(res.body.data, full);
    const discovery = await getJson(`${server.url}/.well-known/openid-configuration`);
    assert.ok(discovery.body.scopes_supported.includes("account"));
  });

  it("leaves introspection's answer the same whatever the scope: the token's own metadata", async () => {
    const narrow = await passwordTokens(server, { user: USER, scope: "openid" });
    const wide = await passwordTokens(server, { user: USER, scope: "openid account" });
    const introspect = async (token: string) =>
      (await postForm(server.url + INTROSPECT_PATH, { token }, { authorization: basicAuth(TEST_APP.clientId, TEST_APP.clientSecret) })).body;
    const [a, b] = [await introspect(narrow.access_token), await introspect(wide.access_token)];
    // How the user signed in (auth_time, acr, amr: issue 46 §4) is the token's metadata too.
    const metadata = ["active", "client_id", "username", "token_type", "exp", "iat", "nbf", "sub", "aud", "iss", "scope", "jti", "auth_time", "acr", "amr"];
    assert.deepEqual(Object.keys(a).sort(), [...metadata].sort());
    assert.deepEqual(Object.keys(b).sort(), [...metadata].sort());
    assert.equal(a.username, USER.name);
    assert.equal(a.scope, "openid");
    assert.equal(b.scope, "openid account");
  });
});
