import assert from "node:assert/strict";
import { decodeJwt } from "jose";
import type { RunningServer } from "../../src/app/server.js";
import { UpstreamClient } from "../../src/federation/upstream.js";
import { BackchannelLogouts } from "../../src/oauth/backchannelLogout.js";
import { judgeLogoutAnswer, retryAfterMs } from "../../src/oauth/logoutAnswers.js";
import { LogoutTokens } from "../../src/oauth/logoutTokens.js";
import type { AuditEvent, AuditRecord } from "../../src/shared/audit.js";
import { silentLogger } from "../../src/shared/log.js";
import { FakeClock } from "../support/clock.js";
import { LogoutReceiver, type LogoutTokenClaims } from "../support/logoutTokens.js";
import { startTestServer, TEST_APP, TEST_USER } from "../support/server.js";

const NOW = Date.UTC(2026, 0, 1, 12, 0, 0);

describe("back-channel logout answers (OIDC Back-Channel Logout 1.0 §2.8)", () => {
  describe("judgeLogoutAnswer", () => {
    it("takes 200 and 204 (and any 2xx) as delivered", () => {
      for (const status of [200, 204, 202]) assert.deepEqual(judgeLogoutAnswer({ status }, NOW), { outcome: "delivered" });
    });

    it("takes a 400, and every 4xx but 408 and 429, as final", () => {
      for (const status of [400, 401, 403, 404, 405, 410, 413, 422, 499]) assert.deepEqual(judgeLogoutAnswer({ status }, NOW), { outcome: "final", status });
    });

    it("retries a 5xx, 408, 429 and anything else, with no wait of its own unless a 429 or 503 asks", () => {
      for (const status of [500, 502, 504, 408, 429, 503, 302, 101]) assert.deepEqual(judgeLogoutAnswer({ status }, NOW), { outcome: "retry", status });
      assert.deepEqual(judgeLogoutAnswer({ status: 429, retryAfter: "30" }, NOW), { outcome: "retry", status: 429, waitMs: 30_000 });
      assert.deepEqual(judgeLogoutAnswer({ status: 503, retryAfter: "Thu, 01 Jan 2026 12:02:00 GMT" }, NOW), { outcome: "retry", status: 503, waitMs: 120_000 });
      assert.deepEqual(judgeLogoutAnswer({ status: 500, retryAfter: "30" }, NOW), { outcome: "retry", status: 500 }, "Retry-After on a 500 is not ours to honour");
    });
  });

  describe("retryAfterMs (RFC 9110 §10.2.3)", () => {
    it("reads delay-seconds and the three HTTP-date forms, each as GMT", () => {
      assert.equal(retryAfterMs("0", NOW), 0);
      assert.equal(retryAfterMs(" 120 ", NOW), 120_000);
      assert.equal(retryAfterMs("Thu, 01 Jan 2026 12:01:00 GMT", NOW), 60_000, "IMF-fixdate");
      assert.equal(retryAfterMs("Thursday, 01-Jan-26 12:01:00 GMT", NOW), 60_000, "rfc850-date");
      assert.equal(retryAfterMs("Thu Jan  1 12:01:00 2026", NOW), 60_000, "asctime-date, GMT whatever the local zone");
    });

    it("makes a date passed no wait, and a two-digit year more than 50 years ahead a past one", () => {
      assert.equal(retryAfterMs("Thu, 01 Jan 2026 11:00:00 GMT", NOW), 0);
      assert.equal(retryAfterMs("Sunday, 06-Nov-94 08:49:37 GMT", NOW), 0, "1994, not 2094");
      assert.equal(retryAfterMs("Friday, 01-Jan-27 12:00:00 GMT", NOW), 365 * 86_400_000, "2027");
    });

    it("ignores what is absent or malformed", () => {
      for (const value of [undefined, "", "-5", "1.5", "soon", "120 seconds", "Thu, 01 Foo 2026 12:01:00 GMT", "2026-01-01T12:01:00Z"]) {
        assert.equal(retryAfterMs(value, NOW), undefined, String(value));
      }
    });
  });

  describe("delivery, on a test clock, to a relying party that answers", function () {
    this.timeout(60_000);
    const receiver = new LogoutReceiver();
    let server: RunningServer;

    before(async () => {
      await receiver.start();
      const rp = { ...TEST_APP, backchannelLogoutUri: receiver.url("/rp1") };
      // The service's own delivery waits: these tests drive one of their own.
      server = await startTestServer({ config: { applications: [rp], users: [TEST_USER] }, backchannelLogout: { pollMs: 3_600_000 } });
      // The relying party's check is not the point here; the token's clock is the test's.
      receiver.verify = async (token) => decodeJwt(token) as LogoutTokenClaims;
    });
    beforeEach(async () => {
      receiver.clear();
      // A test that failed leaves no delivery to the next.
      await server.store.db("backchannel_logouts").delete();
    });
    after(async () => {
      await server?.close();
      await receiver.close();
    });

    /** A delivery on `clock` with the pauses given, and what it audits. */
    function deliveryOn(clock: FakeClock, retryDelaysMs: number[]) {
      const audited: AuditEvent[] = [];
      const delivery = new BackchannelLogouts(
        {
          store: server.store,
          tokens: new LogoutTokens(server.domain.keys, server.store.signingKeys, clock, server.issuer),
          upstream: new UpstreamClient({ timeoutMs: 2_000, maxBodyBytes: 1024 }),
          clock,
          audit: { record: (event: AuditRecord) => audited.push(event as AuditEvent) },
          logger: silentLogger,
        },
        { retryDelaysMs },
      );
      return { delivery, audited };
    }

    /** A session of TEST_USER issued to TEST_APP, ended in the store at `clock`'s now: one delivery queued. */
    async function queueOne(clock: FakeClock): Promise<string> {
      const alice = await server.domain.userAdmin.get(TEST_USER.name);
      const { session } = await server.domain.sessions.create(alice);
      await server.domain.sessions.issuedTo(session, TEST_APP.clientId);
      await server.store.sessions.end(session.idHash, "sign_out", clock.now());
      return session.sid;
    }

    const statuses = () => receiver.received.map((r) => r.status);

    it("tries a 400 once and audits it failed at once, not retried", async () => {
      const clock = new FakeClock();
      const { delivery, audited } = deliveryOn(clock, [1_000, 1_000]);
      await queueOne(clock);
      receiver.failNext(1, 400);
      await delivery.drain();
      assert.deepEqual(statuses(), [400]);
      assert.equal(await server.store.backchannelLogouts.pending(), 0, "the row is ended at once");
      assert.equal(audited.length, 1);
      assert.equal(audited[0]!.event, "backchannel_logout_failed");
      assert.deepEqual(audited[0]!.details, { reason: "sign_out", attempt: 1, error: "the application's backchannelLogoutUri answered HTTP 400", status: 400, retried: false });
      clock.advanceSeconds(60);
      await delivery.drain();
      assert.deepEqual(statuses(), [400], "never sent again");
    });

    it("retries a 429 not before its Retry-After, when that is later than the pause", async () => {
      const clock = new FakeClock();
      const { delivery, audited } = deliveryOn(clock, [1_000, 60_000]);
      const sid = await queueOne(clock);
      receiver.failNext(1, 429, { "retry-after": "30" });
      await delivery.drain();
      assert.deepEqual(statuses(), [429]);
      clock.advanceSeconds(1);
      await delivery.drain();
      clock.advanceSeconds(28);
      await delivery.drain();
      assert.deepEqual(statuses(), [429], "neither after our pause nor a second before the relying party's time");
      clock.advanceSeconds(1);
      await delivery.drain();
      assert.deepEqual(statuses(), [429, 200]);
      assert.equal(receiver.received[1]!.claims!.sid, sid);
      assert.deepEqual(audited.map((e) => [e.event, e.details?.attempt]), [["backchannel_logout_delivered", 2]]);
    });

    it("waits for a 503's Retry-After date no longer than the longest pause of the schedule", async () => {
      const clock = new FakeClock();
      const { delivery } = deliveryOn(clock, [1_000, 60_000]);
      await queueOne(clock);
      receiver.failNext(1, 503, { "retry-after": new Date(clock.now() + 86_400_000).toUTCString() });
      await delivery.drain();
      clock.advanceSeconds(59);
      await delivery.drain();
      assert.deepEqual(statuses(), [503]);
      clock.advanceSeconds(1);
      await delivery.drain();
      assert.deepEqual(statuses(), [503, 200]);
    });

    it("still retries a 500 after the pause, and gives it up after the last with its status", async () => {
      const clock = new FakeClock();
      const { delivery, audited } = deliveryOn(clock, [1_000]);
      await queueOne(clock);
      receiver.failNext(2, 500);
      await delivery.drain();
      assert.deepEqual(statuses(), [500]);
      assert.equal(await server.store.backchannelLogouts.pending(), 1, "kept for a retry");
      clock.advanceSeconds(1);
      await delivery.drain();
      assert.deepEqual(statuses(), [500, 500]);
      assert.equal(await server.store.backchannelLogouts.pending(), 0);
      assert.deepEqual(audited[0]!.details, { reason: "sign_out", attempt: 2, error: "the application's backchannelLogoutUri answered HTTP 500", status: 500 });
    });
  });
});
