import assert from "node:assert/strict";
import { Code, ConnectError } from "@connectrpc/connect";
import { AccountService } from "../../gen/identity/v1/account_pb.js";
import type { RunningServer } from "../../src/app/server.js";
import { totpCode } from "../../src/oauth/factors/totp.js";
import { sha256 } from "../../src/oauth/secrets.js";
import { authorizeUrl, browse, CookieJar, loginFormFields, submit } from "../support/browserless.js";
import { FakeClock } from "../support/clock.js";
import { dpopKey, dpopProof } from "../support/dpop.js";
import { enrolTotp, redeem } from "../support/factors.js";
import { call, getJson, passwordTokens, postJson, TOKEN_PATH } from "../support/oauth.js";
import { connectClients } from "../support/rpc.js";
import { postForm, startTestServer, TEST_APP, TEST_PROVIDER } from "../support/server.js";

const STRICT_APP = { ...TEST_APP, name: "strict", clientId: "client-strict", clientSecret: "secret-strict-of-client-strict", mfa: "required" };
const OPAQUE_APP = { ...TEST_APP, name: "opaque", clientId: "client-opaque", clientSecret: "secret-of-the-opaque-client", accessTokenStrategy: "opaque" };
const STALE = 301;

type User = { name: string; password: string };

/**
 * AccountService (proto/identity/v1/account.proto) over Connect, gRPC-Web,
 * gRPC and REST: the account page's actions for the user of an access token,
 * only on that user's own rows, the ones that strip a factor or a link only
 * after a recent sign-in (RFC 9470), each audited as the page's.
 */
describe("AccountService: a user's own account over RPC and REST", () => {
  let server: RunningServer;
  const clock = new FakeClock();
  const clients = () => connectClients(AccountService, server.url);
  const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });
  const api = (path: string) => `${server.url}/api/account/${path}`;

  before(async () => {
    server = await startTestServer({ clock, config: { applications: [TEST_APP, STRICT_APP, OPAQUE_APP], users: [], providers: [TEST_PROVIDER] } });
  });
  after(() => server?.close());

  async function newUser(name: string): Promise<User & { id: string }> {
    const user = { name, password: `pw-${name}-12345` };
    await server.domain.userAdmin.create(user as never);
    return { ...user, id: (await server.store.users.findByName(name))!.id };
  }

  /** A browser signs in through the login form for `client` (with the one-time code when asked): the session's jar and the redeemed tokens. */
  async function browserTokens(user: User, options: { secret?: string; client?: typeof TEST_APP; jar?: CookieJar; params?: Record<string, string> } = {}) {
    const client = options.client ?? TEST_APP;
    const jar = options.jar ?? new CookieJar();
    const page = await browse(authorizeUrl(server.url, { client_id: client.clientId, ...options.params }), jar);
    assert.equal(page.status, 200, "the login form");
    const fields = loginFormFields(await page.text());
    let res = await submit(`${server.url}/login`, { ...fields, username: user.name, password: user.password }, jar);
    if (options.secret) {
      clock.advanceSeconds(30);
      res = await submit(`${server.url}/login/factor`, { ...fields, code: totpCode(options.secret, clock.now()) }, jar);
    }
    assert.equal(res.status, 303, await res.clone().text());
    return { jar, tokens: (await redeem(server, new URL(res.headers.get("location")!), client)).tokens };
  }

  async function refused(call: Promise<unknown>, code: Code, oauthError: string): Promise<ConnectError> {
    let error: unknown;
    await call.catch((err: unknown) => (error = err));
    assert.ok(error instanceof ConnectError, `refused with ${oauthError}`);
    assert.deepEqual([error.code, error.metadata.get("x-oauth-error")], [code, oauthError], error.message);
    return error;
  }

  async function audited(event: string, userName: string) {
    await server.store.auditWriter.flush();
    return (await server.domain.auditEvents({ event: event as never, userName, pageSize: 100 })).events;
  }

  it("takes the user's access token with openid only: no token, another scope, a client's token or a cookie are refused", async () => {
    const user = await newUser("ann");
    const { connect } = clients();
    await refused(connect.listFactors({}), Code.Unauthenticated, "invalid_token");
    const profileOnly = await passwordTokens(server, { user, scope: "profile" });
    await refused(connect.listFactors({}, bearer(profileOnly.access_token)), Code.PermissionDenied, "insufficient_scope");
    const asRest = await getJson(api("factors"), { authorization: `Bearer ${profileOnly.access_token}` });
    assert.deepEqual([asRest.status, asRest.body.error], [403, "insufficient_scope"]);
    const clientToken = await postForm(server.url + TOKEN_PATH, { grant_type: "client_credentials", client_id: TEST_APP.clientId, client_secret: TEST_APP.clientSecret });
    await refused(connect.listFactors({}, bearer(clientToken.body.access_token)), Code.Unauthenticated, "invalid_token");
    const { jar } = await browserTokens(user);
    const byCookie = await getJson(api("sessions"), { cookie: jar.header() });
    assert.equal(byCookie.status, 401);
    assert.match(byCookie.headers.get("www-authenticate") ?? "", /^Bearer realm="identity", error="invalid_token"/);
  });

  it("lists and ends the caller's own sessions over Connect and REST; another user's session is not found", async () => {
    const user = await newUser("ben");
    const other = await newUser("cleo");
    const { tokens } = await browserTokens(user);
    await browserTokens(user);
    const { tokens: otherTokens } = await browserTokens(other);
    const { connect, grpc } = clients();
    const listed = await connect.listOwnSessions({}, bearer(tokens.access_token));
    assert.equal(listed.sessions.length, 2);
    assert.ok(listed.sessions.every((s) => !s.current && s.id.length > 0 && s.expireTime > s.createdTime && s.authTime > 0n), "no session is marked: the token does not name one");
    const rest = await getJson(api("sessions"), { authorization: `Bearer ${tokens.access_token}` });
    assert.equal(rest.status, 200, rest.text);
    assert.equal(rest.headers.get("cache-control"), "no-store");
    assert.deepEqual(rest.body.sessions.map((s: { id: string }) => s.id).sort(), listed.sessions.map((s) => s.id).sort());
    assert.equal(typeof rest.body.sessions[0].expire_time, "number");

    const theirs = (await connect.listOwnSessions({}, bearer(otherTokens.access_token))).sessions[0]!.id;
    await refused(grpc.endOwnSession({ id: theirs }, bearer(tokens.access_token)), Code.NotFound, "not_found");
    const notMine = await postJson(api("sessions/end"), { id: theirs }, { authorization: `Bearer ${tokens.access_token}` });
    assert.deepEqual([notMine.status, notMine.body.error], [404, "not_found"]);
    assert.equal((await connect.listOwnSessions({}, bearer(otherTokens.access_token))).sessions.length, 1, "cleo's session stands");

    const ended = await postJson(api("sessions/end"), { id: listed.sessions[0]!.id }, { authorization: `Bearer ${tokens.access_token}` });
    assert.equal(ended.status, 200, ended.text);
    assert.deepEqual((await connect.listOwnSessions({}, bearer(tokens.access_token))).sessions.map((s) => s.id), [listed.sessions[1]!.id]);
    const events = await audited("sessions_revoked", user.name);
    assert.deepEqual(events.map((e) => [e.actor.name, e.outcome, e.details]), [[user.name, "success", { sessions: 1, refreshTokens: 0 }]]);
  });

  it("step-up (RFC 9470): a factor is removed only with a sign-in of the last 300 seconds; a stale token is told max_age=300 over Connect and REST", async () => {
    const user = await newUser("dora");
    const { secret } = await enrolTotp(server, user.name);
    const { jar, tokens } = await browserTokens(user, { secret });
    const { connect, grpcWeb, grpc } = clients();
    for (const client of [connect, grpcWeb, grpc]) {
      const listed = await client.listFactors({}, bearer(tokens.access_token));
      assert.deepEqual([listed.factors.map((f) => f.type), listed.recoveryCodesLeft], [["totp"], 10]);
    }
    const factorId = (await connect.listFactors({}, bearer(tokens.access_token))).factors[0]!.id;
    clock.advanceSeconds(STALE);

    const rpcRefusal = await refused(connect.removeFactor({ factorId }, bearer(tokens.access_token)), Code.Unauthenticated, "insufficient_user_authentication");
    assert.match(rpcRefusal.rawMessage, /max_age=300/);
    assert.match(rpcRefusal.metadata.get("www-authenticate") ?? "", /^Bearer realm="identity", error="insufficient_user_authentication", .*, max_age=300$/);
    const rest = await postJson(api("factors/remove"), { factor_id: factorId }, { authorization: `Bearer ${tokens.access_token}` });
    assert.deepEqual([rest.status, rest.body.error], [401, "insufficient_user_authentication"]);
    assert.match(rest.headers.get("www-authenticate") ?? "", /^Bearer realm="identity", error="insufficient_user_authentication", error_description="[^"]+", max_age=300/);
    assert.equal((await server.domain.secondFactors.list(user.id)).length, 1, "nothing removed");

    // The client does as the challenge says: the max_age it names makes the same browser sign in again, code and all.
    const again = await browse(authorizeUrl(server.url, { client_id: STRICT_APP.clientId, max_age: "300" }), jar);
    assert.match(await again.text(), /action="\/login"/, "the old session is not taken");
    const fresh = (await browserTokens(user, { secret, jar, client: STRICT_APP, params: { max_age: "300" } })).tokens;
    // The last factor of a user of a required application goes only with confirm.
    const asked = await refused(connect.removeFactor({ factorId }, bearer(fresh.access_token)), Code.FailedPrecondition, "failed_precondition");
    assert.match(asked.rawMessage, /last second factor.*: strict; send confirm/);
    const askedRest = await postJson(api("factors/remove"), { factor_id: factorId }, { authorization: `Bearer ${fresh.access_token}` });
    assert.deepEqual([askedRest.status, askedRest.body.error], [409, "failed_precondition"]);
    const removed = await postJson(api("factors/remove"), { factor_id: factorId, confirm: true }, { authorization: `Bearer ${fresh.access_token}` });
    assert.equal(removed.status, 200, removed.text);
    assert.deepEqual((await connect.listFactors({}, bearer(fresh.access_token))).factors, []);
    const events = await audited("factor_removed", user.name);
    assert.deepEqual(events.map((e) => [e.actor.name, e.details]), [[user.name, { type: "totp", factorId }]]);
  });

  it("a user cannot remove or rename another user's factor or passkey (not found), and renames their own passkey", async () => {
    const user = await newUser("egon");
    const other = await newUser("fay");
    await enrolTotp(server, other.name);
    const theirTotp = (await server.domain.secondFactors.list(other.id))[0]!.id;
    const passkey = (owner: string, id: string) => server.store.userFactors.insert({
      id, userId: owner, type: "passkey", name: "Old key", secret: null, credentialId: `cred-${id}`, publicKey: "pk", counter: 0, transports: [], confirmed: true, createdAt: clock.now(), lastUsedAt: null,
    });
    // Before the passkey: the password grant refuses a user with a second factor.
    const tokens = await passwordTokens(server, { user });
    await passkey(user.id, "pk-egon");
    await passkey(other.id, "pk-fay");
    const { connect } = clients();
    await refused(connect.removeFactor({ factorId: theirTotp, confirm: true }, bearer(tokens.access_token)), Code.NotFound, "not_found");
    await refused(connect.renamePasskey({ factorId: "pk-fay", name: "Mine now" }, bearer(tokens.access_token)), Code.NotFound, "not_found");
    const wrongType = await postJson(api("passkeys/rename"), { factor_id: theirTotp, name: "x" }, { authorization: `Bearer ${tokens.access_token}` });
    assert.deepEqual([wrongType.status, wrongType.body.error], [404, "not_found"]);
    await refused(connect.renamePasskey({ factorId: "pk-egon", name: "   " }, bearer(tokens.access_token)), Code.InvalidArgument, "invalid_request");
    await connect.renamePasskey({ factorId: "pk-egon", name: " Laptop " }, bearer(tokens.access_token));
    assert.deepEqual((await connect.listFactors({}, bearer(tokens.access_token))).factors.map((f) => [f.id, f.type, f.name]), [["pk-egon", "passkey", "Laptop"]]);
    assert.deepEqual((await server.domain.secondFactors.list(other.id)).map((f) => f.name).sort(), ["Authenticator app", "Old key"], "fay's factors as they were");
  });

  it("unlinks a provider only after a recent sign-in, never another user's link nor the last way to sign in", async () => {
    const link = (userId: string, externalId: string) =>
      server.store.federatedIdentities.insert({ provider: TEST_PROVIDER.name, externalIdType: "sub", externalId, userId, username: externalId, createdAt: clock.now(), updatedAt: clock.now() });
    const user = await newUser("gus");
    const other = await newUser("hal");
    await link(user.id, "gus-at-acme");
    await link(other.id, "hal-at-acme");
    const stale = await passwordTokens(server, { user });
    clock.advanceSeconds(STALE);
    const tokens = await passwordTokens(server, { user });
    const { connect } = clients();
    const listed = await getJson(api("links"), { authorization: `Bearer ${tokens.access_token}` });
    assert.equal(listed.status, 200, listed.text);
    assert.deepEqual(listed.body.providers.map((p: Record<string, string>) => [p.provider, p.external_id_type, p.external_id, p.username]), [[TEST_PROVIDER.name, "sub", "gus-at-acme", "gus-at-acme"]]);
    const key = { provider: TEST_PROVIDER.name, externalIdType: "sub" };

    const staleRest = await postJson(api("links/unlink"), { ...key, external_id: "gus-at-acme" }, { authorization: `Bearer ${stale.access_token}` });
    assert.deepEqual([staleRest.status, staleRest.body.error], [401, "insufficient_user_authentication"]);
    assert.match(staleRest.headers.get("www-authenticate") ?? "", /max_age=300/);
    await refused(connect.unlinkProvider({ ...key, externalId: "hal-at-acme" }, bearer(tokens.access_token)), Code.NotFound, "not_found");
    assert.equal((await server.store.federatedIdentities.listByUser(other.id)).length, 1, "hal's link stands");
    await connect.unlinkProvider({ ...key, externalId: "gus-at-acme" }, bearer(tokens.access_token));
    assert.deepEqual((await connect.listLinkedProviders({}, bearer(tokens.access_token))).providers, []);

    // Hal without a password: the one link is his only way in.
    const halTokens = await passwordTokens(server, { user: other });
    await server.store.db("users").where({ id: other.id }).update({ password_hash: null });
    await refused(connect.unlinkProvider({ ...key, externalId: "hal-at-acme" }, bearer(halTokens.access_token)), Code.FailedPrecondition, "failed_precondition");
    assert.equal((await server.store.federatedIdentities.listByUser(other.id)).length, 1);
  });

  it("an opaque token steps up as a JWT does: a fresh one unlinks, an old one or one whose row says no sign-in time is refused", async () => {
    const user = await newUser("ida");
    const key = { provider: TEST_PROVIDER.name, externalIdType: "sub" as const, externalId: "ida-at-acme" };
    await server.store.federatedIdentities.insert({ ...key, userId: user.id, username: key.externalId, createdAt: clock.now(), updatedAt: clock.now() });
    const stale = await passwordTokens(server, { user, client: OPAQUE_APP });
    clock.advanceSeconds(STALE);
    const [fresh, unsaid] = [await passwordTokens(server, { user, client: OPAQUE_APP }), await passwordTokens(server, { user, client: OPAQUE_APP })];
    // As a token minted before its row kept the sign-in.
    await server.store.db("access_tokens").where({ token_hash: sha256(unsaid.access_token) }).update({ auth_time: null, acr: null, amr: null });
    const { connect } = clients();
    assert.deepEqual((await connect.listFactors({}, bearer(stale.access_token))).factors, []);
    const tooOld = await refused(connect.unlinkProvider(key, bearer(stale.access_token)), Code.Unauthenticated, "insufficient_user_authentication");
    assert.match(tooOld.rawMessage, /too old.*max_age=300/);
    const noTime = await refused(connect.unlinkProvider(key, bearer(unsaid.access_token)), Code.Unauthenticated, "insufficient_user_authentication");
    assert.match(noTime.rawMessage, /does not say when you signed in/);
    assert.equal((await server.store.federatedIdentities.listByUser(user.id)).length, 1, "nothing unlinked");
    await connect.unlinkProvider(key, bearer(fresh.access_token));
    assert.deepEqual((await connect.listLinkedProviders({}, bearer(fresh.access_token))).providers, []);
  });

  it("lists and revokes the caller's own consents; another user's consent is not found and stays", async () => {
    const user = await newUser("jon");
    const other = await newUser("kim");
    const consent = (userId: string, clientId: string) => server.store.consents.remember({ userId, clientId, scopes: ["openid", "email"], resources: [], grantedAt: clock.now() });
    await consent(user.id, TEST_APP.clientId);
    await consent(other.id, STRICT_APP.clientId);
    const allowed = await passwordTokens(server, { user });
    // Another application's token: revoking ends the allowed application's tokens for the user.
    const tokens = await passwordTokens(server, { user, client: OPAQUE_APP });
    const { connect } = clients();
    const listed = await connect.listOwnConsents({}, bearer(tokens.access_token));
    assert.deepEqual(listed.consents.map((c) => [c.clientId, c.application, c.scopes]), [[TEST_APP.clientId, TEST_APP.name, ["openid", "email"]]]);
    const rest = await getJson(api("consents"), { authorization: `Bearer ${tokens.access_token}` });
    assert.deepEqual(rest.body.consents.map((c: Record<string, unknown>) => c.client_id), [TEST_APP.clientId]);

    await refused(connect.revokeOwnConsent({ clientId: STRICT_APP.clientId }, bearer(tokens.access_token)), Code.NotFound, "not_found");
    assert.ok(await server.store.consents.find(other.id, STRICT_APP.clientId), "kim's consent stands");
    const revoked = await postJson(api("consents/revoke"), { client_id: TEST_APP.clientId }, { authorization: `Bearer ${tokens.access_token}` });
    assert.equal(revoked.status, 200, revoked.text);
    assert.equal(revoked.body.refresh_tokens_revoked, 1);
    assert.deepEqual((await connect.listOwnConsents({}, bearer(tokens.access_token))).consents, []);
    await refused(connect.listOwnConsents({}, bearer(allowed.access_token)), Code.Unauthenticated, "invalid_token");
    const events = await audited("consent_revoked", user.name);
    assert.deepEqual(events.map((e) => [e.actor.name, e.clientId]), [[user.name, TEST_APP.clientId]]);
  });

  it("takes a DPoP-bound token with a proof of the call (RFC 9449 §7.1), and challenges a stale one with DPoP and max_age", async () => {
    const user = await newUser("lea");
    const key = await dpopKey();
    const iat = () => Math.floor(clock.now() / 1000);
    const tokenProof = await dpopProof(key, { htm: "POST", htu: `${server.issuer}${TOKEN_PATH}`, iat: iat() });
    const issued = await postForm(server.url + TOKEN_PATH, {
      grant_type: "password", client_id: TEST_APP.clientId, client_secret: TEST_APP.clientSecret, username: user.name, password: user.password, scope: "openid",
    }, { dpop: tokenProof });
    assert.equal(issued.body.token_type, "DPoP", issued.text);
    const token: string = issued.body.access_token;
    const { connect } = clients();
    const htu = `${server.issuer}/identity.v1.AccountService/ListOwnSessions`;
    const proof = await dpopProof(key, { htm: "POST", htu, accessToken: token, iat: iat() });
    assert.deepEqual((await connect.listOwnSessions({}, { headers: { authorization: `DPoP ${token}`, dpop: proof } })).sessions, []);
    await refused(connect.listOwnSessions({}, bearer(token)), Code.Unauthenticated, "invalid_token");

    clock.advanceSeconds(STALE);
    const url = api("links/unlink");
    const restProof = await dpopProof(key, { htm: "POST", htu: `${server.issuer}/api/account/links/unlink`, accessToken: token, iat: iat() });
    const res = await call(url, { method: "POST", headers: { authorization: `DPoP ${token}`, dpop: restProof, "content-type": "application/json" }, body: JSON.stringify({ provider: "x" }) });
    assert.deepEqual([res.status, res.body.error], [401, "insufficient_user_authentication"]);
    assert.match(res.headers.get("www-authenticate") ?? "", /^DPoP realm="identity", error="insufficient_user_authentication", .*algs="[^"]+", max_age=300/);
  });
});
