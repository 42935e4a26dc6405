import assert from "node:assert/strict";
import type { LookupFunction } from "node:net";
import { createLocalJWKSet, exportJWK, generateKeyPair, SignJWT } from "jose";
import type { RunningServer } from "../../src/app/server.js";
import { UpstreamClient } from "../../src/federation/upstream.js";
import { BackchannelLogouts } from "../../src/oauth/backchannelLogout.js";
import { LogoutTokens } from "../../src/oauth/logoutTokens.js";
import { SESSION_COOKIE } from "../../src/oauth/sessions.js";
import type { AuditEvent, AuditRecord } from "../../src/shared/audit.js";
import { silentLogger } from "../../src/shared/log.js";
import { BACKCHANNEL_LOGOUT_EVENT, verifyLogoutToken } from "../support/logoutTokens.js";
import { startTestServer, TEST_APP, TEST_USER } from "../support/server.js";
import { aBrowser, codeFlow } from "../support/backchannel.js";

const ISSUER = "https://op.example";

/** A logout token signed with `key`, every claim right unless `over` says otherwise. */
async function logoutToken(key: Parameters<SignJWT["sign"]>[0], over: Record<string, unknown> = {}): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ iss: ISSUER, aud: "rp", iat: now, exp: now + 120, jti: crypto.randomUUID(), sub: "user-1", sid: "sid-1", events: { [BACKCHANNEL_LOGOUT_EVENT]: {} }, ...over })
    .setProtectedHeader({ alg: "ES256", kid: "k1", typ: "logout+jwt" })
    .sign(key);
}

describe("back-channel logout attacks (issue 45 §6)", () => {
  it("our verifier refuses a logout token with a nonce (§2.6), which could otherwise pass for an ID token", async () => {
    const { privateKey, publicKey } = await generateKeyPair("ES256");
    const keys = createLocalJWKSet({ keys: [{ ...(await exportJWK(publicKey)), kid: "k1", alg: "ES256" }] });
    const expected = { issuer: ISSUER, audience: "rp", keys };
    assert.equal((await verifyLogoutToken(await logoutToken(privateKey), expected)).sid, "sid-1", "the same token without a nonce passes");
    await assert.rejects(verifyLogoutToken(await logoutToken(privateKey, { nonce: "n-0S6_WzA2Mj" }), expected), /nonce/);
    await assert.rejects(verifyLogoutToken(await logoutToken(privateKey, { events: {} }), expected), /back-channel logout event/);
    await assert.rejects(verifyLogoutToken(await logoutToken(privateKey, { sub: undefined, sid: undefined }), expected), /neither sub nor sid/);
    const seen = new Set<string>();
    const once = await logoutToken(privateKey);
    await verifyLogoutToken(once, { ...expected, seen });
    await assert.rejects(verifyLogoutToken(once, { ...expected, seen }), /jti already seen/, "a replayed token");
  });

  describe("against the service", () => {
    let server: RunningServer;
    before(async () => {
      // The service's own delivery waits: these tests drive one of their own.
      server = await startTestServer({ config: { applications: [TEST_APP], users: [TEST_USER] }, backchannelLogout: { pollMs: 3_600_000 } });
    });
    after(() => server.close());

    it("refuses one of its own logout tokens as id_token_hint: it is no ID token, and the session stays", async () => {
      const app = await server.domain.applicationAdmin.get(TEST_APP.name);
      const alice = await server.domain.userAdmin.get(TEST_USER.name);
      const { cookie } = await server.domain.sessions.create(alice);
      const token = await new LogoutTokens(server.domain.keys, server.store.signingKeys, server.domain.clock, server.issuer).sign(app, { sub: alice.id, sid: "any" });
      const res = await fetch(`${server.url}/api/logout?id_token_hint=${token}`, { headers: { cookie: `${SESSION_COOKIE}=${cookie}` }, redirect: "manual" });
      assert.equal(res.status, 400);
      assert.equal(((await res.json()) as { error: string }).error, "invalid_request");
      assert.ok(await server.domain.sessions.find(cookie));
    });

    it("asks before signing out with an ID token of an earlier session of the same user", async () => {
      const earlier = await codeFlow(server, TEST_APP, aBrowser());
      const browser = aBrowser();
      const current = await codeFlow(server, TEST_APP, browser);
      const logout = (hint: string) => fetch(`${server.url}/api/logout?id_token_hint=${hint}`, { headers: { cookie: browser.header() }, redirect: "manual" });
      const asked = await logout(earlier.id_token);
      assert.equal(asked.status, 200);
      assert.equal(asked.headers.get("content-type"), "text/html; charset=utf-8", "the confirmation page");
      assert.ok(await server.domain.sessions.find(browser.get(SESSION_COOKIE)), "the session survives");
      const done = await logout(current.id_token);
      assert.deepEqual(await done.json(), { status: "ok", msg: "", data: "" });
      assert.equal(await server.domain.sessions.find(browser.get(SESSION_COOKIE)), undefined);
    });

    it("sends nothing to a host name that resolves to a private address: the rule is held again when connecting", async () => {
      await server.domain.applicationAdmin.update({ name: TEST_APP.name, backchannelLogoutUri: "https://rp.internal.example/bc" });
      const alice = await server.domain.userAdmin.get(TEST_USER.name);
      const { session } = await server.domain.sessions.create(alice);
      await server.domain.sessions.issuedTo(session, TEST_APP.clientId);
      // Ended in the store: the service's own delivery is not woken.
      await server.store.sessions.end(session.idHash, "sign_out", Date.now());
      const lookups: string[] = [];
      const toPrivate: LookupFunction = (hostname, _options, callback) => {
        lookups.push(hostname);
        (callback as unknown as (err: null, all: { address: string; family: number }[]) => void)(null, [{ address: "10.0.0.9", family: 4 }]);
      };
      const audited: AuditRecord[] = [];
      const delivery = new BackchannelLogouts(
        {
          store: server.store,
          tokens: new LogoutTokens(server.domain.keys, server.store.signingKeys, server.domain.clock, server.issuer),
          upstream: new UpstreamClient({ timeoutMs: 2_000, maxBodyBytes: 1024, lookup: toPrivate }),
          clock: server.domain.clock,
          audit: { record: (event) => audited.push(event) },
          logger: silentLogger,
        },
        { retryDelaysMs: [] },
      );
      await delivery.drain();
      assert.deepEqual(lookups, ["rp.internal.example"]);
      const [failed] = audited as AuditEvent[];
      assert.equal(failed?.event, "backchannel_logout_failed");
      assert.match(String(failed?.details?.error), /targets a loopback, private or link-local address/);
      assert.equal(await server.store.backchannelLogouts.pending(), 0);
    });
  });
});
