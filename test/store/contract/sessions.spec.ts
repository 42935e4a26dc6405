import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { anAccessToken, T0 } from "../../support/storeFixtures.js";
import { anApplication, aUser, aRefreshToken, aSession } from "./fixtures.js";
import { describeEachBackend } from "../../support/databases.js";

describeEachBackend("storage contract: sessions", (ctx) => {
  describe("sessions", () => {
    it("round-trips by hash and ends", async () => {
      const session = aSession();
      await ctx.store.sessions.insert(session);
      assert.deepEqual(await ctx.store.sessions.findByHash(session.idHash), session);
      assert.equal(await ctx.store.sessions.end(session.idHash, "sign_out", T0), true);
      assert.equal(await ctx.store.sessions.findByHash(session.idHash), undefined);
      assert.equal(await ctx.store.sessions.end(session.idHash, "sign_out", T0), false, "a missing row is no error");
    });
  });

  describe("a user's sign-ins, for administration", () => {
    it("lists live sessions and the live refresh token of each grant, newest first, with the application's name", async () => {
      const user = aUser();
      const app = anApplication();
      await ctx.store.users.insert(user);
      await ctx.store.applications.insert(app);
      const older = aSession({ userId: user.id, createdAt: T0 + 1 });
      const newer = aSession({ userId: user.id, createdAt: T0 + 2 });
      const expired = aSession({ userId: user.id, expiresAt: T0 + 5 });
      for (const s of [older, newer, expired, aSession()]) await ctx.store.sessions.insert(s);
      const familyId = randomUUID();
      const consumed = aRefreshToken({ userId: user.id, familyId, clientId: app.clientId, consumedAt: T0 + 1 });
      const current = aRefreshToken({ userId: user.id, familyId, clientId: app.clientId, issuedAt: T0 + 2 });
      const orphan = aRefreshToken({ userId: user.id, clientId: "gone-client", issuedAt: T0 + 1 });
      const revoked = aRefreshToken({ userId: user.id, revokedAt: T0 });
      for (const t of [consumed, current, orphan, revoked, aRefreshToken()]) await ctx.store.refreshTokens.insert(t);

      const now = T0 + 10;
      assert.deepEqual((await ctx.store.userSignIns.sessions(user.id, now)).map((s) => s.idHash), [newer.idHash, older.idHash]);
      assert.deepEqual(await ctx.store.userSignIns.refreshGrants(user.id, now), [
        { familyId, clientId: app.clientId, applicationName: app.name, scope: current.scope, authTime: current.authTime, issuedAt: T0 + 2, expiresAt: current.expiresAt },
        { familyId: orphan.familyId, clientId: "gone-client", scope: orphan.scope, authTime: orphan.authTime, issuedAt: T0 + 1, expiresAt: orphan.expiresAt },
      ]);
    });

    it("ends one session or grant of that user only, and everything at once", async () => {
      const user = aUser();
      await ctx.store.users.insert(user);
      const [mine, other] = [aSession({ userId: user.id }), aSession({ userId: user.id })];
      const someoneElses = aSession();
      for (const s of [mine, other, someoneElses]) await ctx.store.sessions.insert(s);
      assert.equal(await ctx.store.userSignIns.endSession(user.id, someoneElses.idHash, T0), false, "not this user's");
      assert.equal(await ctx.store.userSignIns.endSession(user.id, mine.idHash, T0), true);
      assert.equal(await ctx.store.sessions.findByHash(mine.idHash), undefined);

      const grant = aRefreshToken({ userId: user.id });
      const access = anAccessToken({ userId: user.id, familyId: grant.familyId });
      const kept = aRefreshToken({ userId: user.id });
      const stranger = aRefreshToken();
      for (const t of [grant, kept, stranger]) await ctx.store.refreshTokens.insert(t);
      await ctx.store.accessTokens.insert(access);
      assert.equal(await ctx.store.userSignIns.revokeGrant(user.id, stranger.familyId, T0 + 1), false, "not this user's");
      assert.equal((await ctx.store.refreshTokens.findByHash(stranger.tokenHash))?.revokedAt, null);
      assert.equal(await ctx.store.userSignIns.revokeGrant(user.id, grant.familyId, T0 + 1), true);
      assert.equal((await ctx.store.refreshTokens.findByHash(grant.tokenHash))?.revokedAt, T0 + 1);
      assert.equal((await ctx.store.accessTokens.findByHash(access.tokenHash))?.revokedAt, T0 + 1, "with its access tokens");

      const loose = anAccessToken({ userId: user.id, familyId: null });
      await ctx.store.accessTokens.insert(loose);
      assert.deepEqual(await ctx.store.userSignIns.endAll(user.id, T0 + 2), { sessions: 1, grants: 1 });
      assert.equal(await ctx.store.sessions.findByHash(other.idHash), undefined);
      assert.equal((await ctx.store.refreshTokens.findByHash(kept.tokenHash))?.revokedAt, T0 + 2);
      assert.equal((await ctx.store.accessTokens.findByHash(loose.tokenHash))?.revokedAt, T0 + 2);
      assert.ok(await ctx.store.sessions.findByHash(someoneElses.idHash), "other users keep theirs");
    });
  });
});
