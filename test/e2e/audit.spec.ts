import assert from "node:assert/strict";
import { createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { ApplicationAdminService, KeyAdminService, SessionAdminService, UserAdminService } from "../../gen/identity/v1/admin_pb.js";
import { EventAdminService } from "../../gen/identity/v1/events_pb.js";
import { FederationService } from "../../gen/identity/v1/federation_pb.js";
import { ResourceAdminService } from "../../gen/identity/v1/resources_pb.js";
import type { RunningServer } from "../../src/app/server.js";
import { AUDIT_EVENTS, type AuditEvent } from "../../src/shared/audit.js";
import { totpCode } from "../../src/oauth/factors/totp.js";
import { describeEachDatabase } from "../support/databases.js";
import { sendJsonBody, startFakeUpstream, type FakeUpstream } from "../support/fakeUpstream.js";
import { captureLogs, type CapturedLogs } from "../support/logs.js";
import { TOKEN_PATH } from "../support/oauth.js";
import { ADMIN_TOKEN, basicAuth, postForm, startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

/** TEST_APP with refresh tokens, so rotation and reuse can happen. */
const APP = { ...TEST_APP, refreshExpireInHours: 24 };
const LOCKOUT_AFTER = 3;

describeEachDatabase("audit trail", (ctx) => {
  let logs: CapturedLogs;
  let server: RunningServer;
  let fake: FakeUpstream;
  let apps: Client<typeof ApplicationAdminService>;
  let users: Client<typeof UserAdminService>;
  let keys: Client<typeof KeyAdminService>;
  let sessions: Client<typeof SessionAdminService>;
  let federation: Client<typeof FederationService>;
  let events: Client<typeof EventAdminService>;
  const admin = { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } };
  /** Every secret the suite saw or sent: none may appear in an event or an audit line. */
  const secrets = new Set<string>([APP.clientSecret, TEST_USER.password, ADMIN_TOKEN]);

  const token = async (params: Record<string, string>) => {
    const res = await postForm(`${server.url}${TOKEN_PATH}`, params, { authorization: basicAuth(APP.clientId, APP.clientSecret) });
    for (const name of ["access_token", "refresh_token", "id_token"]) if (res.body?.[name]) secrets.add(res.body[name]);
    return res;
  };
  const stored = async (): Promise<AuditEvent[]> => {
    await server.store.auditWriter.flush();
    return (await server.domain.auditEvents({ pageSize: 1000 })).events;
  };
  // A token response's event rides on its request's line; every other event has a line of its own.
  const auditLines = () => logs.lines().filter((l) => l.msg === "audit event" || (l.msg === "request" && l.event !== undefined));

  before(async () => {
    fake = await startFakeUpstream();
    logs = captureLogs("info");
    server = await startTestServer({
      database: ctx.url,
      config: { applications: [APP], users: [TEST_USER] },
      logger: logs.logger,
      overrides: { loginMaxFailures: LOCKOUT_AFTER, keyActivationDelaySeconds: 0, clientRegistration: "open" },
    });
    const transport = createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" });
    apps = createClient(ApplicationAdminService, transport);
    users = createClient(UserAdminService, transport);
    keys = createClient(KeyAdminService, transport);
    sessions = createClient(SessionAdminService, transport);
    federation = createClient(FederationService, transport);
    events = createClient(EventAdminService, transport);
    secrets.add(fake.provider("x").clientSecret as string);
  });
  after(async () => {
    await server?.close();
    await fake?.close();
  });

  it("records every kind of event in the database and as one JSON log line each, with no secret in either", async () => {
    // Tokens: client_credentials, password (a sign-in), refresh, refresh reuse, revocation.
    assert.equal((await token({ grant_type: "client_credentials" })).status, 200);
    const signedIn = await token({ grant_type: "password", username: TEST_USER.name, password: TEST_USER.password, scope: "openid" });
    assert.equal(signedIn.status, 200);
    assert.equal((await token({ grant_type: "refresh_token", refresh_token: signedIn.body.refresh_token })).status, 200);
    assert.equal((await token({ grant_type: "refresh_token", refresh_token: signedIn.body.refresh_token })).status, 400);
    const revoked = await postForm(`${server.url}/api/login/oauth/revoke`, { token: signedIn.body.access_token }, { authorization: basicAuth(APP.clientId, APP.clientSecret) });
    assert.equal(revoked.status, 200);
    // Failed sign-ins up to a lockout.
    for (let i = 0; i < LOCKOUT_AFTER; i++) {
      const wrong = `wrong-password-${i}`;
      secrets.add(wrong);
      assert.equal((await token({ grant_type: "password", username: "mallory", password: wrong })).status, 400);
    }
    // Admin changes.
    const created = await apps.createApplication({ application: { name: "audited", redirectUris: ["https://a.example/cb"] } }, admin);
    secrets.add(created.clientSecret);
    const newSecret = "a-chosen-secret-of-the-audited-app-0123";
    secrets.add(newSecret);
    await apps.updateApplication({ application: { name: "audited", clientSecret: newSecret, expireInHours: 2 } }, admin);
    const rotatedSecret = await apps.rotateApplicationSecret({ name: "audited" }, admin);
    secrets.add(rotatedSecret.clientSecret);
    await apps.deleteApplication({ name: "audited" }, admin);
    const bobPassword = "bob-first-password-123";
    const bobNewPassword = "bob-second-password-456";
    secrets.add(bobPassword).add(bobNewPassword);
    await users.createUser({ user: { name: "bob", password: bobPassword, email: "bob@example.com" } }, admin);
    await users.updateUser({ user: { name: "bob", password: bobNewPassword, displayName: "Bob" } }, admin);
    await users.deleteUser({ name: "bob" }, admin);
    await federation.createProvider({ provider: fake.provider("audited-idp") }, admin);
    await federation.updateProvider({ provider: { name: "audited-idp", displayName: "Audited IdP" } }, admin);
    // Federated sign-in, one that works and one the provider's token endpoint refuses.
    const begun = await federation.beginLogin({ provider: "audited-idp" });
    secrets.add(begun.loginSecret).add(begun.state);
    const code = "federation-code-never-logged-123";
    secrets.add(code);
    await federation.completeLogin({ state: begun.state, code, loginSecret: begun.loginSecret, provider: "audited-idp" });
    fake.token = (_req, res) => sendJsonBody(res, 400, { error: "invalid_grant" });
    const again = await federation.beginLogin({ provider: "audited-idp" });
    secrets.add(again.loginSecret).add(again.state);
    await federation.completeLogin({ state: again.state, code, loginSecret: again.loginSecret, provider: "audited-idp" }).then(
      () => assert.fail("the provider refused the code"),
      () => {},
    );
    fake.reset();
    for (const t of fake.issuedTokens) secrets.add(t);
    await federation.deleteProvider({ name: "audited-idp" }, admin);
    const resources = createClient(ResourceAdminService, createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" }));
    await resources.createResource({ resource: { uri: "https://audited.example/api", name: "Audited" } }, admin);
    await resources.updateResource({ resource: { uri: "https://audited.example/api", name: "Audited API" } }, admin);
    await resources.deleteResource({ uri: "https://audited.example/api" }, admin);
    const registered = await fetch(`${server.url}/api/oauth/register`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ redirect_uris: ["https://agent.example/cb"] }),
    });
    const registration = (await registered.json()) as { client_id: string; client_secret: string; registration_access_token: string };
    secrets.add(registration.client_secret).add(registration.registration_access_token);
    const rotated = await keys.rotateKey({}, admin);
    // Alice's refresh token from the password grant above is the grant to end.
    const ended = await sessions.revokeAllUserSessions({ user: TEST_USER.name }, admin);
    // Second factors (issue #46): enrolled, used, a recovery code, a step-up, removed by an admin.
    const aliceUser = (await server.store.users.findByName(TEST_USER.name))!;
    const factors = server.domain.secondFactors;
    const enrolment = await factors.beginTotp(aliceUser);
    secrets.add(enrolment.secret);
    const recovery = (await factors.confirmTotp(aliceUser, enrolment.factorId, totpCode(enrolment.secret, Date.now() - 30_000)))!;
    for (const c of recovery) secrets.add(c);
    assert.ok(await factors.verify(aliceUser, totpCode(enrolment.secret, Date.now())));
    assert.ok(await factors.verify(aliceUser, recovery[0]!));
    server.domain.signInPolicy.stepUpRequested(aliceUser, (await server.store.applications.findByClientId(APP.clientId))!, { acrValues: ["mfa"] } as never);
    await users.removeUserFactor({ user: TEST_USER.name, factorId: enrolment.factorId }, admin);

    const all = await stored();
    const lines = auditLines();
    const byName = (name: string) => all.filter((e) => e.event === name);
    const one = (name: string, match: (e: AuditEvent) => boolean = () => true) => {
      const found = byName(name).filter(match);
      assert.equal(found.length, 1, `one ${name} event: ${JSON.stringify(byName(name))}`);
      return found[0]!;
    };

    // Every event kind happened.
    const seen = new Set(all.map((e) => e.event));
    // Self-service events need a mail server: test/e2e/selfService.spec.ts and test/e2e/mailDelivery.spec.ts record them;
    // consent_revoked needs a registered client's consent: test/e2e/consentAdmin.spec.ts records it, by a user and by an admin;
    // the account page's, test/e2e/accountPage.spec.ts; passkey events need an authenticator: test/oauth/factors/passkeys.spec.ts;
    // back-channel logouts a relying party: test/e2e/backchannelLogoutDelivery.spec.ts.
    const elsewhere = new Set(["signup", "email_verified", "password_reset", "mail_failed", "consent_revoked", "password_changed", "passkey_added", "passkey_removed", "backchannel_logout_delivered", "backchannel_logout_failed"]);
    assert.deepEqual(AUDIT_EVENTS.filter((name) => !seen.has(name) && !elsewhere.has(name)), []);

    const cc = one("token_issued", (e) => e.details?.grantType === "client_credentials");
    assert.deepEqual(cc.actor, { kind: "client", id: cc.actor.id, name: APP.clientId });
    assert.ok(cc.actor.id.length > 0);
    assert.equal(cc.clientId, APP.clientId);
    assert.equal(cc.clientAddress, "127.0.0.1");
    assert.equal(cc.userId, null);
    const pw = one("token_issued", (e) => e.details?.grantType === "password");
    assert.equal(pw.userName, TEST_USER.name);
    const alice = await server.domain.userAdmin.get(TEST_USER.name);
    assert.equal(pw.userId, alice.id);

    const success = one("sign_in", (e) => e.outcome === "success");
    assert.deepEqual(success.actor, { kind: "user", id: alice.id, name: TEST_USER.name });
    assert.equal(success.clientId, APP.clientId);
    assert.equal(success.clientAddress, "127.0.0.1");
    const failures = byName("sign_in").filter((e) => e.outcome === "failure");
    assert.equal(failures.length, LOCKOUT_AFTER);
    for (const f of failures) {
      assert.deepEqual(f.actor, { kind: "user", id: "", name: "mallory" });
      assert.equal(f.details?.reason, "invalid_credentials");
    }
    const lockout = one("lockout");
    assert.equal(lockout.userName, "mallory");
    assert.equal(lockout.details?.locked, "user");

    assert.equal(one("token_issued", (e) => e.details?.grantType === "refresh_token").userId, alice.id);
    const reuse = one("refresh_reuse");
    assert.equal(reuse.outcome, "failure");
    assert.equal(reuse.details?.familyRevoked, true);
    assert.equal(reuse.userId, alice.id);
    const revocation = one("token_revoked");
    assert.deepEqual([revocation.actor.name, revocation.details?.tokenType, revocation.userId], [APP.clientId, "access_token", alice.id]);

    const adminActor = { kind: "admin", id: "admin", name: "admin" };
    const [secretRotation, appUpdate] = byName("application_updated").filter((e) => e.details?.target === "audited");
    assert.ok(secretRotation && appUpdate);
    assert.deepEqual([secretRotation.details?.changes, secretRotation.details?.secretsChanged], [{}, ["clientSecretHash"]]);
    assert.deepEqual(appUpdate.actor, adminActor);
    assert.equal(appUpdate.clientAddress, "127.0.0.1");
    assert.deepEqual(appUpdate.details?.changes, { expireInHours: { before: 1, after: 2 } });
    assert.deepEqual(appUpdate.details?.secretsChanged, ["clientSecretHash"]);
    assert.equal(one("application_created", (e) => e.details?.target === "audited").clientId, created.application!.clientId);
    const appDelete = one("application_deleted", (e) => e.details?.target === "audited");
    assert.equal((appDelete.details?.changes as Record<string, { before: unknown }>).name!.before, "audited");
    const bobCreated = one("user_created", (e) => e.userName === "bob");
    assert.equal((bobCreated.details?.changes as Record<string, { after: unknown }>).email!.after, "bob@example.com");
    assert.deepEqual(bobCreated.details?.secretsChanged, ["passwordHash"]);
    assert.equal(one("password_set", (e) => e.userName === "bob").actor.name, "admin");
    assert.deepEqual(one("user_updated", (e) => e.userName === "bob").details?.changes, { displayName: { before: "", after: "Bob" } });
    one("user_deleted", (e) => e.userName === "bob");
    one("provider_created", (e) => e.details?.target === "audited-idp");
    assert.deepEqual(one("provider_updated").details?.changes, { displayName: { before: "Fake IdP", after: "Audited IdP" } });
    one("provider_deleted");
    assert.deepEqual(one("resource_updated").details?.changes, { name: { before: "Audited", after: "Audited API" } });
    one("resource_created", (e) => e.details?.target === "https://audited.example/api");
    one("resource_deleted");
    assert.equal(one("client_registered").clientId, registration.client_id);
    assert.equal(one("key_rotated").details?.target, rotated.key!.kid);
    const revokedSessions = one("sessions_revoked");
    assert.deepEqual([revokedSessions.userName, revokedSessions.actor.name], [TEST_USER.name, "admin"]);
    assert.deepEqual(revokedSessions.details, { target: TEST_USER.name, sessions: ended.sessionsRevoked, refreshTokens: ended.refreshTokensRevoked });

    const federated = one("federated_sign_in", (e) => e.outcome === "success");
    assert.equal(federated.actor.kind, "user");
    assert.equal(federated.actor.name, federated.userName);
    assert.ok(federated.userId);
    assert.equal(federated.clientAddress, "127.0.0.1");
    assert.equal(one("federated_sign_in", (e) => e.outcome === "failure").details?.provider, "audited-idp");

    // The log has one line per stored event, with the same fields.
    assert.equal(lines.length, all.length);
    for (const line of lines) assert.equal(line.msg, line.event === "token_issued" ? "request" : "audit event", JSON.stringify(line));
    for (const e of all) {
      const line = lines.find((l) => l.event === e.event && JSON.stringify(l.actor) === JSON.stringify(e.actor) && JSON.stringify(l.details ?? null) === JSON.stringify(e.details));
      assert.ok(line, `a log line for ${JSON.stringify(e)}`);
      assert.equal(line.outcome, e.outcome);
      assert.equal(line.clientAddress ?? null, e.clientAddress);
      assert.equal(line.clientId ?? null, e.clientId);
      assert.equal(line.userName ?? null, e.userName);
      assert.ok(Math.abs(Date.parse(line.time) - e.time) < 5000, "the line's time is the event's");
    }

    // The whole log, not only its audit lines: the request lines of these calls too.
    const everything = JSON.stringify(all) + logs.text();
    assert.ok(secrets.size > 15);
    for (const secret of secrets) assert.ok(!everything.includes(secret), `a secret in the audit trail: ${secret.slice(0, 8)}…`);
  });

  it("lists events over the admin RPC, newest first, filtered and a page at a time", async () => {
    await assert.rejects(events.listEvents({}), /admin token|access token/);
    const all = (await events.listEvents({ pageSize: 1000 }, admin)).events;
    const times = all.map((e) => Number(e.timeMs));
    assert.deepEqual(times, [...times].sort((a, b) => b - a), "newest first");

    const pages: string[] = [];
    let pageToken = "";
    do {
      const page = await events.listEvents({ pageSize: 4, pageToken }, admin);
      assert.ok(page.events.length <= 4);
      pages.push(...page.events.map((e) => e.id));
      pageToken = page.nextPageToken;
    } while (pageToken);
    assert.deepEqual(pages, all.map((e) => e.id), "pages neither repeat nor skip");

    const mallory = (await events.listEvents({ user: "mallory" }, admin)).events;
    assert.deepEqual([...new Set(mallory.map((e) => e.event))].sort(), ["lockout", "sign_in"]);
    const issued = (await events.listEvents({ type: "token_issued", clientId: APP.clientId }, admin)).events;
    assert.deepEqual(issued.map((e) => JSON.parse(e.detailsJson).grantType).sort(), ["client_credentials", "password", "refresh_token"]);
    assert.equal((await events.listEvents({ clientId: "nobody" }, admin)).events.length, 0);
    const newest = all[0]!;
    const since = (await events.listEvents({ sinceMs: newest.timeMs }, admin)).events;
    assert.ok(since.length >= 1 && since.every((e) => e.timeMs >= newest.timeMs));
    await assert.rejects(events.listEvents({ pageToken: "not-a-token" }, admin), /page token/);
    await assert.rejects(events.listEvents({ pageSize: 5000 }, admin), /page size/);
  });

  it("records exactly one token_issued event for each of 200 parallel token requests", async () => {
    const before = (await stored()).filter((e) => e.event === "token_issued").length;
    const answers = await Promise.all(Array.from({ length: 200 }, () => token({ grant_type: "client_credentials" })));
    assert.deepEqual([...new Set(answers.map((a) => a.status))], [200]);
    const after = (await stored()).filter((e) => e.event === "token_issued").length;
    assert.equal(after - before, 200);
  });
});
