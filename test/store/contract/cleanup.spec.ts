import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { CleanupJob } from "../../../src/app/housekeeping.js";
import { silentLogger } from "../../../src/shared/log.js";
import { deleteExpired } from "../../../src/store/cleanup.js";
import { FakeClock } from "../../support/clock.js";
import { anAccessToken, hash, HOUR, T0 } from "../../support/storeFixtures.js";
import { NOTHING_SWEPT, aUser, aRefreshToken, aSession, aFederationState } from "./fixtures.js";
import { describeEachBackend } from "../../support/databases.js";

describeEachBackend("storage contract: cleanup", (ctx) => {
  describe("cleanup of expired rows", () => {
    // Far past every other test's rows, so once those are drained the counts below are exact.
    let clock: FakeClock;
    const limits = { batchSize: 3, maxBatches: 2 };
    const job = () => new CleanupJob(ctx.db, clock, silentLogger, { ...limits, intervalMs: 60_000 });

    beforeEach(async () => {
      clock = new FakeClock(T0 + 1000 * 24 * HOUR);
      while (Object.values(await deleteExpired(ctx.db, clock.now(), { batchSize: 1000, maxBatches: 10 })).some((n) => n > 0));
    });

    it("keeps an expired authorization code for a day, so a replay is still recognised, then deletes it", async () => {
      const now = clock.now();
      const code = {
        codeHash: `code-${now}`, familyId: "code-family", clientId: "client", userId: "user", redirectUri: "http://127.0.0.1/cb",
        scope: "openid", nonce: null, codeChallenge: null, codeChallengeMethod: null, authTime: Math.floor(now / 1000), claims: null,
        createdAt: now, expiresAt: now + 1000, consumedAt: now, replayedAt: null,
      };
      await ctx.store.authorizationCodes.insert(code);
      clock.advanceSeconds(23 * 3600);
      assert.equal((await job().runOnce()).authorization_codes, 0);
      clock.advanceSeconds(3601);
      assert.equal((await job().runOnce()).authorization_codes, 1);
    });

    it("deletes expired access tokens, sessions and federation states, and keeps live ones", async () => {
      const now = clock.now();
      const expiredAccess = anAccessToken({ expiresAt: now + 1000 });
      const expiredFamilyless = anAccessToken({ expiresAt: now + 1000, familyId: null });
      const liveAccess = anAccessToken({ expiresAt: now + HOUR });
      const expiredSession = aSession({ expiresAt: now + 1000 });
      const liveSession = aSession({ expiresAt: now + HOUR });
      const expiredState = aFederationState({ expiresAt: now + 1000 });
      const liveState = aFederationState({ expiresAt: now + HOUR });
      for (const t of [expiredAccess, expiredFamilyless, liveAccess]) await ctx.store.accessTokens.insert(t);
      for (const s of [expiredSession, liveSession]) await ctx.store.sessions.insert(s);
      for (const s of [expiredState, liveState]) await ctx.store.federationStates.insert(s);

      assert.deepEqual(await job().runOnce(), NOTHING_SWEPT);
      clock.advanceSeconds(1);
      assert.deepEqual(await job().runOnce(), { ...NOTHING_SWEPT, access_tokens: 2, sessions: 1, federation_states: 1 });
      assert.equal(await ctx.store.accessTokens.findByHash(expiredAccess.tokenHash), undefined);
      assert.equal(await ctx.store.accessTokens.findByHash(expiredFamilyless.tokenHash), undefined);
      assert.equal(await ctx.store.sessions.findByHash(expiredSession.idHash), undefined);
      assert.equal(await ctx.store.federationStates.findByHash(expiredState.stateHash), undefined);
      assert.ok(await ctx.store.accessTokens.findByHash(liveAccess.tokenHash));
      assert.ok(await ctx.store.sessions.findByHash(liveSession.idHash));
      assert.ok(await ctx.store.federationStates.findByHash(liveState.stateHash));
    });

    it("deletes a client assertion's jti once the assertion has expired, and keeps a live one", async () => {
      const now = clock.now();
      await ctx.store.clientAssertionJtis.useOnce(`expiring-${now}`, now + 1000, now);
      await ctx.store.clientAssertionJtis.useOnce(`live-${now}`, now + HOUR, now);
      assert.equal((await job().runOnce()).client_assertion_jtis, 0);
      clock.advanceSeconds(1);
      assert.equal((await job().runOnce()).client_assertion_jtis, 1);
      assert.equal(await ctx.store.clientAssertionJtis.useOnce(`live-${now}`, now + HOUR, clock.now()), false);
    });

    it("deletes a pushed authorization request once it has expired, and keeps a live one", async () => {
      const now = clock.now();
      const row = (hashed: string, expiresAt: number) => ({ requestUriHash: hashed, clientId: "client", params: "{}", expiresAt });
      await ctx.store.pushedAuthorizationRequests.insert(row(`expiring-${now}`, now + 1000), 10, now);
      await ctx.store.pushedAuthorizationRequests.insert(row(`live-${now}`, now + HOUR), 10, now);
      assert.equal((await job().runOnce()).pushed_authorization_requests, 0);
      clock.advanceSeconds(1);
      assert.equal((await job().runOnce()).pushed_authorization_requests, 1);
      assert.equal(await ctx.store.pushedAuthorizationRequests.take(`live-${now}`, "client", clock.now()), "{}");
    });

    it("deletes a DPoP proof's jti once the proof's iat window has ended, and keeps a live one", async () => {
      const now = clock.now();
      await ctx.store.dpopProofJtis.useOnce(`expiring-${now}`, now + 1000, now);
      await ctx.store.dpopProofJtis.useOnce(`live-${now}`, now + HOUR, now);
      assert.equal((await job().runOnce()).dpop_proof_jtis, 0);
      clock.advanceSeconds(1);
      assert.equal((await job().runOnce()).dpop_proof_jtis, 1);
      assert.equal(await ctx.store.dpopProofJtis.useOnce(`live-${now}`, now + HOUR, clock.now()), false);
    });

    it("deletes a request object's jti once the object has expired, and keeps a live one", async () => {
      const now = clock.now();
      await ctx.store.requestObjectJtis.useOnce(`expiring-${now}`, now + 1000, now);
      await ctx.store.requestObjectJtis.useOnce(`live-${now}`, now + HOUR, now);
      assert.equal((await job().runOnce()).request_object_jtis, 0);
      clock.advanceSeconds(1);
      assert.equal((await job().runOnce()).request_object_jtis, 1);
      assert.equal(await ctx.store.requestObjectJtis.useOnce(`live-${now}`, now + HOUR, clock.now()), false);
    });

    it("keeps an expired refresh token while its family still has a live one", async () => {
      const now = clock.now();
      const familyId = randomUUID();
      const consumed = aRefreshToken({ familyId, consumedAt: now, expiresAt: now + 1000 });
      const current = aRefreshToken({ familyId, expiresAt: now + 5000 });
      const lone = aRefreshToken({ expiresAt: now + 1000 });
      for (const t of [consumed, current, lone]) await ctx.store.refreshTokens.insert(t);

      clock.advanceSeconds(1);
      assert.equal((await job().runOnce()).refresh_tokens, 1);
      assert.equal(await ctx.store.refreshTokens.findByHash(lone.tokenHash), undefined);
      assert.ok(await ctx.store.refreshTokens.findByHash(consumed.tokenHash), "reuse of the consumed token must still be detectable");

      clock.advanceSeconds(4);
      assert.equal((await job().runOnce()).refresh_tokens, 2);
      assert.equal(await ctx.store.refreshTokens.findByHash(consumed.tokenHash), undefined);
      assert.equal(await ctx.store.refreshTokens.findByHash(current.tokenHash), undefined);
    });

    it("keeps a family's expired refresh tokens while one of its access tokens is live", async () => {
      const now = clock.now();
      const familyId = randomUUID();
      const consumed = aRefreshToken({ familyId, consumedAt: now, expiresAt: now + 1000 });
      const current = aRefreshToken({ familyId, expiresAt: now + 1000 });
      const access = anAccessToken({ familyId, expiresAt: now + 5000 });
      for (const t of [consumed, current]) await ctx.store.refreshTokens.insert(t);
      await ctx.store.accessTokens.insert(access);

      clock.advanceSeconds(1);
      assert.deepEqual(await job().runOnce(), NOTHING_SWEPT);
      assert.ok(await ctx.store.refreshTokens.findByHash(consumed.tokenHash), "reuse must still revoke the live access token");

      clock.advanceSeconds(4);
      assert.deepEqual(await job().runOnce(), { ...NOTHING_SWEPT, access_tokens: 1, refresh_tokens: 2 });
    });

    it("keeps an expired email link and an hourly budget for a day, then deletes them", async () => {
      const now = clock.now();
      const user = aUser();
      await ctx.store.users.insert(user);
      await ctx.store.emailLinks.issue({ tokenHash: hash(), userId: user.id, purpose: "verify", email: "", continueRequest: null, createdAt: now, expiresAt: now });
      assert.equal(await ctx.store.actionLimits.take(`reset:${hash()}`, 5, now, HOUR), true);
      clock.advanceSeconds(23 * 3600);
      const mine = ({ email_links, action_limits }: Record<string, number>) => ({ email_links, action_limits });
      assert.deepEqual(mine(await job().runOnce()), { email_links: 0, action_limits: 0 });
      clock.advanceSeconds(3600);
      assert.deepEqual(mine(await job().runOnce()), { email_links: 1, action_limits: 1 });
    });

    it("deletes at most batchSize × maxBatches rows per table per run", async () => {
      const now = clock.now();
      for (let i = 0; i < 8; i++) await ctx.store.sessions.insert(aSession({ expiresAt: now }));
      assert.equal((await job().runOnce()).sessions, 6);
      assert.equal((await job().runOnce()).sessions, 2);
      assert.equal((await job().runOnce()).sessions, 0);
    });

    it("splits the work between runs at the same moment, each row deleted once", async () => {
      const now = clock.now();
      for (let i = 0; i < 40; i++) await ctx.store.accessTokens.insert(anAccessToken({ expiresAt: now }));
      const runs = await Promise.all(Array.from({ length: 4 }, () => deleteExpired(ctx.db, now, { batchSize: 5, maxBatches: 10 })));
      assert.equal(runs.reduce((sum, r) => sum + r.access_tokens!, 0), 40);
      const [left] = await ctx.db("access_tokens").where("expires_at", "<=", now).count({ n: "*" });
      assert.equal(Number(left!.n), 0);
    });
  });
});
