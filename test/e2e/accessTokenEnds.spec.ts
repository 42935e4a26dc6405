import assert from "node:assert/strict";
import { status } from "@grpc/grpc-js";
import type { RunningServer } from "../../src/app/server.js";
import { authorizeUrl, browse, CookieJar, loginFormFields, submit } from "../support/browserless.js";
import { getJson, isActive, passwordTokens, postJson, type TestClient } from "../support/oauth.js";
import { grpcJsCall, grpcJsClients } from "../support/rpc.js";
import { BACKENDS, describeEachDatabase } from "../support/databases.js";
import { ADMIN_TOKEN, startTestServer, TEST_APP } from "../support/server.js";

/**
 * A password change and a consent's revocation end the access tokens issued
 * before them at once, not at their `exp`: with a refresh token beside them
 * (password grant) and without (implicit), JWT and opaque alike, seen at
 * introspection, at REST userinfo and at gRPC GetUserInfo (the unary door),
 * each of which looks the token's row up (the store's side: test/store/contract).
 * Two instances share the database: the tokens come from one and are checked
 * at the other, which has answered for them before (its kept rows, on a
 * SQLite file), and the changes are made at the first.
 */
const JWT_APP = { ...TEST_APP, consentRequired: true };
const OPAQUE_APP = { ...TEST_APP, name: "opaque", clientId: "client-opaque", clientSecret: "secret-of-client-opaque", accessTokenStrategy: "opaque", consentRequired: true };
const APPS = [JWT_APP, OPAQUE_APP];
const LIVE = { active: true, userinfo: 200, rpc: status.OK };
const ENDED = { active: false, userinfo: 401, rpc: status.UNAUTHENTICATED };

// Every backend two servers can share (`:memory:` is a database per connection).
const SHARED = BACKENDS.filter((b) => b.name !== "SQLite :memory:");

describeEachDatabase("access tokens end with the password and with the consent", (db) => {
  /** Where tokens are issued and changes made. */
  let server: RunningServer;
  /** Where tokens are checked. */
  let other: RunningServer;
  let grpc: ReturnType<typeof grpcJsClients>;

  before(async () => {
    const options = { database: db.url, config: { applications: APPS, users: [] }, overrides: { issuer: "http://identity.test" } };
    server = await startTestServer(options);
    other = await startTestServer(options);
    grpc = grpcJsClients(other.port);
  });
  after(async () => {
    for (const client of Object.values(grpc ?? {})) client.close();
    await other?.close();
    await server?.close();
  });

  async function newUser(name: string) {
    const user = { name, password: `pw-${name}-12345` };
    await server.domain.userAdmin.create(user as never);
    return user;
  }

  const hiddenFields = (html: string) => Object.fromEntries([...html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map(([, n, v]) => [n!, v!]));

  /** An implicit access token (no refresh token beside it) of `app` for the browser of `jar`, signing in and allowing on the way as asked. */
  async function implicitToken(app: TestClient, jar: CookieJar, user: { name: string; password: string }): Promise<string> {
    let res = await browse(authorizeUrl(server.url, { client_id: app.clientId, response_type: "token", scope: "openid" }), jar);
    let page = res.status === 200 ? await res.text() : "";
    if (/name="password"/.test(page)) {
      res = await submit(`${server.url}/login`, { ...loginFormFields(page), username: user.name, password: user.password }, jar);
      page = res.status === 200 ? await res.text() : "";
    }
    if (page) res = await submit(`${server.url}/login/oauth/consent`, { ...hiddenFields(page), decision: "allow" }, jar);
    const location = new URL(res.headers.get("location") ?? "http://x/");
    const token = new URLSearchParams(location.hash.slice(1)).get("access_token");
    assert.ok(token, `${res.status} ${location.href}`);
    return token;
  }

  /** For each application: a token with a refresh token beside it, and one without; the browser that got them. */
  async function tokensOf(user: { name: string; password: string }) {
    const jar = new CookieJar();
    const tokens: { app: TestClient; token: string; kind: string }[] = [];
    for (const app of APPS) {
      const granted = await passwordTokens(server, { client: app, user, scope: "openid" });
      assert.ok(granted.refresh_token);
      const format = app === OPAQUE_APP ? "opaque" : "JWT";
      tokens.push({ app, token: granted.access_token, kind: `${format}, with a refresh token` });
      tokens.push({ app, token: await implicitToken(app, jar, user), kind: `${format}, implicit` });
    }
    for (const t of tokens) assert.deepEqual(await standing(t), LIVE, t.kind);
    return { tokens, jar };
  }

  /** What the other instance's introspection (by the token's own client), userinfo and its RPC (a gRPC status code) say of a token. */
  async function standing({ app, token }: { app: TestClient; token: string }) {
    const userinfo = await getJson(`${other.url}/api/userinfo`, { authorization: `Bearer ${token}` });
    const rpc = await grpcJsCall(grpc.introspection, "GetUserInfo", {}, { authorization: `Bearer ${token}` });
    return { active: await isActive(other, token, app), userinfo: userinfo.status, rpc: rpc.error?.code ?? status.OK };
  }

  /** The CSRF token of an account page (`/account`, `/account/consents`) in the browser of `jar`. */
  async function csrfOf(path: string, jar: CookieJar): Promise<string> {
    const res = await browse(`${server.url}${path}`, jar);
    assert.equal(res.status, 200);
    return /name="csrf_token" value="([^"]+)"/.exec(await res.text())![1]!;
  }

  it("a password change on the account page ends every access token issued before it, this browser's included", async () => {
    const user = await newUser("petra");
    const { tokens, jar } = await tokensOf(user);
    const changed = await submit(`${server.url}/account/password`, { csrf_token: await csrfOf("/account", jar), current_password: user.password, password: "pw-petra-new-1", password_again: "pw-petra-new-1" }, jar);
    assert.equal(changed.status, 303, await changed.text());
    for (const t of tokens) assert.deepEqual(await standing(t), ENDED, t.kind);
    const after = await passwordTokens(server, { user: { name: user.name, password: "pw-petra-new-1" }, scope: "openid" });
    assert.deepEqual(await standing({ app: JWT_APP, token: after.access_token }), LIVE, "one issued after it lives");
  });

  it("a password set by an admin ends them too", async () => {
    const user = await newUser("paul");
    const { tokens } = await tokensOf(user);
    await server.domain.userAdmin.update({ name: user.name, password: "pw-paul-new-12" } as never);
    for (const t of tokens) assert.deepEqual(await standing(t), ENDED, t.kind);
  });

  it("revoking a consent ends that application's access tokens for the user, with or without a refresh token, and no other application's", async () => {
    const user = await newUser("rosa");
    const { tokens, jar } = await tokensOf(user);
    const revoked = await postJson(`${server.url}/api/admin/revoke-consent`, { user: user.name, client_id: OPAQUE_APP.clientId }, { authorization: `Bearer ${ADMIN_TOKEN}` });
    assert.equal(revoked.status, 200, revoked.text);
    for (const t of tokens) {
      const ended = t.app === OPAQUE_APP;
      assert.deepEqual(await standing(t), ended ? ENDED : LIVE, t.kind);
    }
    // The user's own revocation (/account/consents) ends the other application's.
    const own = await submit(`${server.url}/account/consents`, { client_id: JWT_APP.clientId, csrf_token: await csrfOf("/account/consents", jar) }, jar);
    assert.equal(own.status, 200);
    for (const t of tokens) assert.deepEqual(await standing(t), ENDED, t.kind);
  });
}, SHARED);
