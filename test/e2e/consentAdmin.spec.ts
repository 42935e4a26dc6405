import assert from "node:assert/strict";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { ApplicationAdminService } from "../../gen/identity/v1/admin_pb.js";
import { ApplicationChoicesService } from "../../gen/identity/v1/choices_pb.js";
import { ConsentAdminService } from "../../gen/identity/v1/consents_pb.js";
import type { RunningServer } from "../../src/app/server.js";
import { GRANT_TABLE } from "../../src/oauth/grants/index.js";
import { authorizeUrl, browse, signIn, submit } from "../support/browserless.js";
import { allowAndRedeem, CONSENT_CALLBACK, CookieJar, refreshes, registerClient, type RegisteredClient } from "../support/consents.js";
import { getJson, postJson } from "../support/oauth.js";
import { ADMIN_TOKEN, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

/** Issue 43 §2: consents listed and revoked by the user at /account/consents and by an admin (ConsentAdminService, RPC and REST). */
const admin = { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } };
const bearer = { authorization: `Bearer ${ADMIN_TOKEN}` };
const BOB = { name: "bob", password: "pw-bob-1234567", displayName: "Bob" };
const TOOLS = { uri: "https://tools.example.com/mcp", name: "Example tools", scopes: [{ name: "mcp:tools", description: "Use the example tools" }] };

describe("consents: /account/consents and ConsentAdminService", () => {
  let server: RunningServer;
  let consents: ReturnType<typeof createClient<typeof ConsentAdminService>>;
  let agent: RegisteredClient;
  let other: RegisteredClient;
  let jar: CookieJar;

  before(async () => {
    server = await startTestServer({ config: { applications: [TEST_APP], users: [TEST_USER, BOB], resources: [TOOLS] }, overrides: { clientRegistration: "open" } });
    consents = createClient(ConsentAdminService, createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" }));
    agent = await registerClient(server, "Agent <b>X</b>");
    other = await registerClient(server, "Other agent");
    ({ jar } = await signIn(server));
  });
  after(() => server.close());

  const auditEvents = async (query: { userName?: string; clientId?: string }) => {
    await server.store.auditWriter.flush();
    return server.domain.auditEvents({ ...query, event: "consent_revoked", pageSize: 100 });
  };
  const page = (cookies = jar) => browse(`${server.url}/account/consents`, cookies);
  const csrf = (html: string) => /name="csrf_token" value="([^"]+)"/.exec(html)![1]!;
  const consentPageShown = async (client: RegisteredClient) =>
    (await browse(authorizeUrl(server.url, { client_id: client.client_id, redirect_uri: CONSENT_CALLBACK, scope: "openid" }), jar)).status === 200;

  it("lists the applications the user allowed, with scopes in words, resources and when, escaped", async () => {
    const u = new URL(authorizeUrl(server.url, { client_id: agent.client_id, redirect_uri: CONSENT_CALLBACK, scope: "openid email mcp:tools offline_access" }));
    u.searchParams.append("resource", TOOLS.uri);
    const consent = await browse(u.href, jar);
    const fields = Object.fromEntries([...(await consent.text()).matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map(([, n, v]) => [n!, v!]));
    assert.equal((await submit(`${server.url}/login/oauth/consent`, { ...fields, decision: "allow" }, jar)).status, 303);
    const res = await page();
    assert.equal(res.status, 200);
    const html = await res.text();
    assert.match(html, /<h2 id="consent-0">Agent &#60;b&#62;X&#60;\/b&#62;<\/h2>/);
    assert.match(html, /See your email address <code>email<\/code>/);
    assert.match(html, /Use the example tools <code>mcp:tools<\/code>/);
    assert.match(html, /Example tools <code>https:\/\/tools\.example\.com\/mcp<\/code>/);
    assert.match(html, /<time datetime="\d{4}-\d\d-\d\dT/);
    assert.match(html, /<button type="submit" aria-label="Revoke Agent &#60;b&#62;X&#60;\/b&#62;">Revoke<\/button>/);
    assert.doesNotMatch(html, /<script/);
    assert.match(res.headers.get("content-security-policy") ?? "", /default-src 'none'.*frame-ancestors 'none'/);
    assert.equal(res.headers.get("x-frame-options"), "DENY");
  });

  it("asks a browser without a session to sign in, and lists nobody's consents to it", async () => {
    const res = await page(new CookieJar());
    assert.equal(res.status, 200);
    const html = await res.text();
    assert.match(html, /name="password"/, "the login form");
    assert.doesNotMatch(html, /Agent/);
  });

  it("attack: a revocation without this browser's CSRF token, or from another user's session, revokes nothing", async () => {
    const refreshToken = await allowAndRedeem(server, agent, jar);
    const forged = await submit(`${server.url}/account/consents`, { client_id: agent.client_id }, jar);
    assert.equal(forged.status, 403);
    const { jar: bobs } = await signIn(server, {}, { username: BOB.name, password: BOB.password });
    const bobPage = await (await page(bobs)).text();
    assert.match(bobPage, /You have not allowed any application yet/);
    const asBob = await submit(`${server.url}/account/consents`, { client_id: agent.client_id, csrf_token: bobs.get("identity_csrf")! }, bobs);
    assert.equal(asBob.status, 200);
    assert.match(await asBob.text(), /had no access left to revoke/);
    assert.ok(await refreshes(server, agent, refreshToken), "alice's grant lives on");
    assert.equal(await consentPageShown(agent), false, "alice's consent stays");
  });

  it("the user revokes one: its refresh tokens end, the next request asks again, the other stays, and it is audited", async () => {
    const [mine, theirs] = [await allowAndRedeem(server, agent, jar), await allowAndRedeem(server, other, jar)];
    const before = await (await page()).text();
    const revoked = await submit(`${server.url}/account/consents`, { client_id: agent.client_id, csrf_token: csrf(before) }, jar);
    assert.equal(revoked.status, 200);
    const after = await revoked.text();
    assert.match(after, /role="status">Agent &#60;b&#62;X&#60;\/b&#62; no longer has access to your account\./);
    assert.doesNotMatch(after, /<h2[^>]*>Agent/);
    assert.match(after, /<h2[^>]*>Other agent<\/h2>/);
    assert.equal(await refreshes(server, agent, mine), false);
    assert.ok(await refreshes(server, other, theirs));
    assert.ok(await consentPageShown(agent), "asks again");
    assert.equal(await consentPageShown(other), false);
    const events = await auditEvents({ userName: TEST_USER.name });
    assert.deepEqual(events.events.map((e) => [e.actor.kind, e.actor.name, e.clientId]), [["user", TEST_USER.name, agent.client_id]]);
  });

  it("an admin lists and revokes over RPC: refresh tokens end, the event names the admin, a second revocation is NOT_FOUND", async () => {
    const refreshToken = await allowAndRedeem(server, agent, jar, "openid offline_access mcp:tools", [TOOLS.uri]);
    const listed = await consents.listConsents({ user: TEST_USER.name }, admin);
    const mine = listed.consents.find((c) => c.clientId === agent.client_id)!;
    assert.equal(mine.application, "Agent <b>X</b>");
    assert.equal(mine.registered, true);
    assert.ok(mine.scopes.includes("offline_access"));
    assert.deepEqual(mine.resources.map((r) => [r.uri, r.name]), [[TOOLS.uri, TOOLS.name]]);
    assert.ok(mine.grantedTime > 0n);
    assert.deepEqual((await consents.revokeConsent({ user: TEST_USER.name, clientId: agent.client_id }, admin)).refreshTokensRevoked, 1);
    assert.equal(await refreshes(server, agent, refreshToken), false);
    await assert.rejects(consents.revokeConsent({ user: TEST_USER.name, clientId: agent.client_id }, admin), (err: ConnectError) => err.code === Code.NotFound);
    await assert.rejects(consents.listConsents({ user: "nobody" }, admin), (err: ConnectError) => err.code === Code.NotFound);
    await assert.rejects(consents.listConsents({ user: TEST_USER.name }), (err: ConnectError) => err.code === Code.Unauthenticated);
    const events = await auditEvents({ clientId: agent.client_id });
    assert.equal(events.events[0]?.actor.kind, "admin");
  });

  it("an admin lists and revokes over REST with the same token, and nobody else can", async () => {
    const refreshToken = await allowAndRedeem(server, other, jar);
    const url = `${server.url}/api/admin/consents?user=${TEST_USER.name}`;
    assert.equal((await getJson(url)).status, 401);
    const listed = await getJson(url, bearer);
    assert.equal(listed.status, 200, listed.text);
    assert.ok(listed.body.consents.some((c: { client_id: string }) => c.client_id === other.client_id), listed.text);
    const revoke = { user: TEST_USER.name, client_id: other.client_id };
    assert.equal((await postJson(`${server.url}/api/admin/revoke-consent`, revoke)).status, 401);
    const revoked = await postJson(`${server.url}/api/admin/revoke-consent`, revoke, bearer);
    assert.equal(revoked.status, 200, revoked.text);
    assert.ok(revoked.body.refresh_tokens_revoked >= 1, revoked.text);
    assert.equal(await refreshes(server, other, refreshToken), false);
    assert.equal((await postJson(`${server.url}/api/admin/revoke-consent`, revoke, bearer)).status, 404);
  });

  it("shows registered clients as registered and consent-required, which an admin cannot turn off; admin-made ones may turn it on", async () => {
    const applications = createClient(ApplicationAdminService, createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" }));
    const listed = (await applications.listApplications({}, admin)).applications;
    const registered = listed.find((a) => a.clientId === agent.client_id)!;
    assert.deepEqual([registered.registered, registered.consentRequired], [true, true]);
    const own = listed.find((a) => a.clientId === TEST_APP.clientId)!;
    assert.deepEqual([own.registered, own.consentRequired], [false, false]);
    await assert.rejects(applications.updateApplication({ application: { name: registered.name, consentRequired: false } }, admin), (err: ConnectError) =>
      err.code === Code.InvalidArgument && /consentRequired/.test(err.rawMessage));
    const created = await applications.createApplication({ application: { name: "asks-first", redirectUris: [CONSENT_CALLBACK], consentRequired: true } }, admin);
    assert.equal(created.application?.consentRequired, true);
    const asks = await browse(authorizeUrl(server.url, { client_id: created.application!.clientId, redirect_uri: CONSENT_CALLBACK }), jar);
    assert.equal(asks.status, 200, "an admin-made application with consentRequired gets the consent page");
    assert.match(await asks.text(), /Allow asks-first\?/);
    await applications.deleteApplication({ name: "asks-first" }, admin);
  });

  it("ApplicationChoicesService gives the grant table's grants with their facts, and each other list's values", async () => {
    const choices = createClient(ApplicationChoicesService, createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" }));
    const answer = await choices.getApplicationChoices({}, admin);
    assert.deepEqual(
      answer.grantTypes.map((g) => [g.grantType, g.shortName, g.alwaysOn, g.needsSecret]),
      GRANT_TABLE.map((g) => [g.grantType, g.shortName ?? "", g.alwaysEnabled, g.needsSecret]),
    );
    assert.deepEqual(answer.tokenEndpointAuthMethods, ["client_secret_basic", "client_secret_post", "client_secret_jwt", "private_key_jwt", "none"]);
    assert.deepEqual(answer.mfaPolicies, ["optional", "required"]);
    await assert.rejects(choices.getApplicationChoices({}), (err: ConnectError) => err.code === Code.Unauthenticated);
    const rest = await getJson(`${server.url}/api/admin/application-choices`, bearer);
    assert.equal(rest.status, 200, rest.text);
    assert.equal(rest.body.grant_types[0].grant_type, "authorization_code");
  });
});
