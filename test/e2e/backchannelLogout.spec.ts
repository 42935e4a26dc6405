import assert from "node:assert/strict";
import { createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { decodeJwt } from "jose";
import { SessionAdminService, UserAdminService } from "../../gen/identity/v1/admin_pb.js";
import type { RunningServer } from "../../src/app/server.js";
import { SESSION_COOKIE } from "../../src/oauth/sessions.js";
import type { AuditEvent } from "../../src/shared/audit.js";
import { aBrowser, codeFlow, relyingParties, verifyAs, type RelyingParty, type SignedInTokens } from "../support/backchannel.js";
import type { CookieJar } from "../support/browserless.js";
import { LogoutReceiver, type ReceivedLogout } from "../support/logoutTokens.js";
import { getJson } from "../support/oauth.js";
import { askReset, followLink } from "../support/selfService.js";
import { ADMIN_TOKEN, basicAuth, postForm, startTestServer, TEST_USER } from "../support/server.js";
import { linkIn, TestSmtpServer } from "../support/smtp.js";

const admin = { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } };

async function auditEvents(server: RunningServer, event: string): Promise<AuditEvent[]> {
  await server.store.auditWriter.flush();
  return (await server.domain.auditEvents({ event, pageSize: 100 })).events;
}

describe("back-channel logout (OpenID Connect Back-Channel Logout 1.0, issue 45 §6)", function () {
  this.timeout(60_000);
  const receiver = new LogoutReceiver();
  let server: RunningServer;
  let smtp: TestSmtpServer;
  let told: RelyingParty[];
  let silent: RelyingParty;
  let sessions: Client<typeof SessionAdminService>;
  let users: Client<typeof UserAdminService>;
  let userCount = 0;

  before(async () => {
    await receiver.start();
    smtp = await new TestSmtpServer().start();
    const rps = relyingParties(receiver);
    ({ told, silent } = rps);
    server = await startTestServer({
      config: { applications: [...told, silent], users: [TEST_USER] },
      overrides: { smtpUrl: smtp.url, mailFrom: "identity@example.com" },
      backchannelLogout: { pollMs: 50 },
    });
    verifyAs(receiver, server, rps.byPath);
    const transport = createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" });
    sessions = createClient(SessionAdminService, transport);
    users = createClient(UserAdminService, transport);
  });
  beforeEach(() => receiver.clear());
  after(async () => {
    await server?.close();
    await smtp?.close();
    await receiver.close();
  });

  /** A user of its own, signed in once in one browser to every relying party; the ID tokens by client id. */
  async function signedInEverywhere(): Promise<{ user: { name: string; password: string; id: string }; jar: CookieJar; idTokens: Map<string, SignedInTokens> }> {
    const user = { name: `bc-user-${++userCount}`, password: "pw-of-a-bc-user-1", email: `bc${userCount}@example.com` };
    const created = await server.domain.userAdmin.create(user);
    const jar = aBrowser();
    const idTokens = new Map<string, SignedInTokens>();
    for (const rp of [...told, silent]) idTokens.set(rp.clientId, await codeFlow(server, rp, jar, user));
    return { user: { ...user, id: created.id }, jar, idTokens };
  }

  /** Each told relying party received one token, verified with jose, naming this user and session. */
  async function assertToldOnce(user: { id: string }, sid: string): Promise<ReceivedLogout[]> {
    const accepted = await receiver.accepted(told.length);
    await new Promise((resolve) => setTimeout(resolve, 150));
    const mine = receiver.received.filter((r) => r.claims?.sid === sid);
    assert.deepEqual(mine.map((r) => r.claims!.aud).sort(), told.map((rp) => rp.clientId).sort(), "one token per relying party with a URI, none for the other");
    for (const r of mine) {
      assert.equal(r.claims!.sub, user.id);
      assert.equal(r.claims!.sid, sid);
      assert.equal("nonce" in r.claims!, false);
    }
    return accepted;
  }

  const sidOf = (tokens: SignedInTokens) => decodeJwt(tokens.id_token).sid as string;

  it("is in discovery, and ID tokens carry one sid per browser session, kept by a refresh and by a sign-in again", async () => {
    const config = await getJson(`${server.url}/.well-known/openid-configuration`);
    assert.equal(config.body.backchannel_logout_supported, true);
    assert.equal(config.body.backchannel_logout_session_supported, true);

    const { user, jar, idTokens } = await signedInEverywhere();
    const sids = new Set([...idTokens.values()].map(sidOf));
    assert.equal(sids.size, 1, "every relying party's ID token names the one session");
    const [sid] = sids;
    assert.match(sid!, /^[A-Za-z0-9_-]{20,}$/);
    assert.notEqual(sid, jar.get(SESSION_COOKIE), "not the cookie");

    const refreshed = await postForm(
      `${server.url}/api/login/oauth/access_token`,
      { grant_type: "refresh_token", refresh_token: idTokens.get(told[1]!.clientId)!.refresh_token! },
      { authorization: basicAuth(told[1]!.clientId, told[1]!.clientSecret) },
    );
    assert.equal(sidOf(refreshed.body), sid, "a refreshed ID token names the same session");

    // prompt=login: the same user signs in again in this browser; the session goes on under a new cookie.
    const before = jar.get(SESSION_COOKIE);
    const again = await codeFlow(server, told[0]!, jar, user, { prompt: "login" });
    assert.notEqual(jar.get(SESSION_COOKIE), before);
    assert.equal(sidOf(again), sid);
    assert.equal(receiver.received.length, 0, "nobody is told of a session that goes on");
    const other = await codeFlow(server, told[0]!, aBrowser(), user);
    assert.notEqual(sidOf(other), sid, "another browser, another session");
  });

  it("RP-initiated sign-out: each relying party the session issued to receives a logout token, the sign-out answered first", async () => {
    const { user, jar, idTokens } = await signedInEverywhere();
    const hint = idTokens.get(told[1]!.clientId)!.id_token;
    receiver.hold();
    const started = Date.now();
    const res = await fetch(`${server.url}/api/logout?id_token_hint=${hint}`, { headers: { cookie: jar.header() }, redirect: "manual" });
    assert.equal(res.status, 200);
    assert.ok(Date.now() - started < 2_000, "the sign-out does not wait for any relying party");
    assert.equal(receiver.received.length, 0, "nothing answered yet");
    receiver.release();
    await assertToldOnce(user, sidOf(idTokens.get(told[0]!.clientId)!));
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.ok((await auditEvents(server, "backchannel_logout_delivered")).some((e) => e.userId === user.id && e.details?.reason === "sign_out"));
  });

  it("an admin revokes one session by RPC, then all of a user's", async () => {
    const { user, idTokens } = await signedInEverywhere();
    const second = await codeFlow(server, told[0]!, aBrowser(), user);
    const listed = await sessions.listUserSessions({ user: user.name }, admin);
    assert.equal(listed.sessions.length, 2);
    const first = sidOf(idTokens.get(told[0]!.clientId)!);
    // The newest first: the second browser's session.
    await sessions.revokeSession({ user: user.name, sessionId: listed.sessions[1]!.id }, admin);
    await assertToldOnce(user, first);

    receiver.clear();
    await sessions.revokeAllUserSessions({ user: user.name }, admin);
    const [only] = await receiver.accepted(1);
    assert.equal(only!.claims!.sid, sidOf(second));
    assert.equal(only!.claims!.aud, told[0]!.clientId, "the second browser signed in to one relying party");
  });

  it("disabling the user, and deleting it", async () => {
    const disabled = await signedInEverywhere();
    await users.updateUser({ user: { name: disabled.user.name, disabled: true } }, admin);
    await assertToldOnce(disabled.user, sidOf(disabled.idTokens.get(told[0]!.clientId)!));

    receiver.clear();
    const deleted = await signedInEverywhere();
    await users.deleteUser({ name: deleted.user.name }, admin);
    await assertToldOnce(deleted.user, sidOf(deleted.idTokens.get(told[0]!.clientId)!));
    const reasons = (await auditEvents(server, "backchannel_logout_delivered")).map((e) => e.details?.reason);
    assert.ok(reasons.includes("user_disabled") && reasons.includes("user_deleted"));
  });

  it("a password change: set by an admin, reset by mail, and the account page's entry point", async () => {
    const byAdmin = await signedInEverywhere();
    await users.updateUser({ user: { name: byAdmin.user.name, password: "a-new-password-by-admin" } }, admin);
    await assertToldOnce(byAdmin.user, sidOf(byAdmin.idTokens.get(told[0]!.clientId)!));

    receiver.clear();
    const byMail = await signedInEverywhere();
    await askReset(server, aBrowser(), byMail.user.name);
    const link = linkIn(await smtp.waitFor(`bc${userCount}@example.com`, /Reset your password/), `${server.issuer}/password/reset?token=`);
    assert.equal((await followLink(link, aBrowser(), { password: "brand-new-password-1", password_again: "brand-new-password-1" })).status, 200);
    await assertToldOnce(byMail.user, sidOf(byMail.idTokens.get(told[0]!.clientId)!));

    receiver.clear();
    // The account page changes the password from a browser of its own, whose session stays.
    const onAccountPage = await signedInEverywhere();
    const accountPage = aBrowser();
    const kept = await codeFlow(server, told[1]!, accountPage, onAccountPage.user);
    assert.equal(await server.domain.sessionEnds.userSessionsEnded(onAccountPage.user.id, "password_changed", accountPage.get(SESSION_COOKIE)), 1);
    await assertToldOnce(onAccountPage.user, sidOf(onAccountPage.idTokens.get(told[0]!.clientId)!));
    assert.equal(receiver.received.some((r) => r.claims?.sid === sidOf(kept)), false, "the kept session's relying party hears nothing");
  });
});
