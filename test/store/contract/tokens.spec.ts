import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import type { RefreshTokenRecord } from "../../../src/store/tokens.js";
import { anAccessToken, hash, HOUR, T0 } from "../../support/storeFixtures.js";
import { id, anApplication, aUser, aRefreshToken } from "./fixtures.js";
import { describeEachBackend } from "../../support/databases.js";

describeEachBackend("storage contract: tokens", (ctx) => {
  describe("signing keys", () => {
    it("lists newest first, with retirement times as numbers or null", async () => {
      const older = { kid: `k-${id()}`, alg: "RS256", privateJwk: "{}", publicJwk: "{}", createdAt: T0 - 10, activeFrom: T0 - 10, retiredAt: T0 };
      const newer = { ...older, kid: `k-${id()}`, createdAt: T0 + 10, activeFrom: T0 + 10, retiredAt: null };
      await ctx.store.signingKeys.insert(older);
      await ctx.store.signingKeys.insert(newer);
      const listed = (await ctx.store.signingKeys.list()).filter((k) => k.kid === older.kid || k.kid === newer.kid);
      assert.deepEqual(listed, [newer, older]);
    });
    it("retires an unused key once, however many race to, and not before the latest bound holdUntil set", async () => {
      // Later than every token the other tests make: none of them holds the key.
      const later = T0 + 100_000 * HOUR;
      const key = { kid: `k-${id()}`, alg: "RS256", privateJwk: "{}", publicJwk: "{}", createdAt: T0, activeFrom: T0, retiredAt: null };
      await ctx.store.signingKeys.insert(key);
      await ctx.store.signingKeys.holdUntil(key.kid, later + 100);
      await ctx.store.signingKeys.holdUntil(key.kid, later + 50);
      assert.equal(await ctx.store.signingKeys.retireIfUnused(key.kid, later + 99), false, "an earlier bound does not replace a later one");
      const results = await Promise.all(Array.from({ length: 20 }, () => ctx.store.signingKeys.retireIfUnused(key.kid, later + 100)));
      assert.equal(results.filter(Boolean).length, 1);
      assert.equal((await ctx.store.signingKeys.list()).find((k) => k.kid === key.kid)?.retiredAt, later + 100);
    });
  });

  describe("access tokens", () => {
    it("round-trips by hash, with expiry and revocation times, in a family or in none", async () => {
      for (const token of [anAccessToken({ userId: null }), anAccessToken({ userId: null, familyId: null })]) {
        await ctx.store.accessTokens.insert(token);
        assert.deepEqual(await ctx.store.accessTokens.findByHash(token.tokenHash), token);
      }
      assert.equal(await ctx.store.accessTokens.findByHash(hash()), undefined);
    });

    it("keeps how an opaque token's user signed in, through every write and read, beside rows that keep none", async () => {
      const user = aUser();
      await ctx.store.users.insert(user);
      // An auth_time past 2038: the column holds epoch seconds beyond 32 bits.
      const signedIn = { authTime: 4_102_444_800, acr: "mfa", amr: "pwd otp mfa" };
      const [inserted, added, plain, rotated] = [signedIn, signedIn, {}, signedIn].map((over) => anAccessToken({ userId: user.id, ...over }));
      await ctx.store.accessTokens.insert(inserted);
      // Written together: one row with the columns, one without.
      await Promise.all([added, plain].map((access) => ctx.store.issuedTokens.add({ access })));
      const consumed = aRefreshToken();
      await ctx.store.refreshTokens.insert(consumed);
      assert.equal(await ctx.store.refreshTokens.rotate(consumed.tokenHash, T0, { access: rotated }), true);
      for (const token of [inserted, added, plain, rotated]) {
        assert.deepEqual(await ctx.store.accessTokens.findByHash(token.tokenHash), token);
        assert.deepEqual((await ctx.store.accessTokens.findStandingByHash(token.tokenHash))?.token, token);
        assert.deepEqual((await ctx.store.accessTokens.findWithUserByHash(token.tokenHash))?.token, token);
      }
    });

    it("finds a token with its user in one read: none for a client's token or a deleted user", async () => {
      const user = aUser({ disabled: true });
      await ctx.store.users.insert(user);
      const [userToken, clientToken, orphanToken] = [anAccessToken({ userId: user.id }), anAccessToken({ userId: null }), anAccessToken()];
      for (const t of [userToken, clientToken, orphanToken]) await ctx.store.accessTokens.insert(t);
      assert.deepEqual(await ctx.store.accessTokens.findWithUserByHash(userToken.tokenHash), { token: userToken, user, applicationExists: false });
      assert.deepEqual(await ctx.store.accessTokens.findWithUserByHash(clientToken.tokenHash), { token: clientToken, user: undefined, applicationExists: false });
      assert.deepEqual(await ctx.store.accessTokens.findWithUserByHash(orphanToken.tokenHash), { token: orphanToken, user: undefined, applicationExists: false });
      assert.equal(await ctx.store.accessTokens.findWithUserByHash(hash()), undefined);
      // What another connection commits is seen by the next read.
      await ctx.store.users.update({ ...user, disabled: false, displayName: "Changed" });
      await ctx.store.accessTokens.revoke(userToken.tokenHash, T0 + 1);
      const again = await ctx.store.accessTokens.findWithUserByHash(userToken.tokenHash);
      assert.equal(again?.user?.displayName, "Changed");
      assert.equal(again?.token.revokedAt, T0 + 1);
    });

    it("finds a token with its user's standing and whether its application exists, in one read", async () => {
      const app = anApplication();
      const user = aUser();
      await ctx.store.applications.insert(app);
      await ctx.store.users.insert(user);
      const userToken = anAccessToken({ clientId: app.clientId, userId: user.id });
      const clientToken = anAccessToken({ clientId: app.clientId, userId: null });
      for (const t of [userToken, clientToken]) await ctx.store.accessTokens.insert(t);
      assert.deepEqual(await ctx.store.accessTokens.findStandingByHash(userToken.tokenHash), { token: userToken, user: { disabled: false, name: user.name }, applicationExists: true });
      assert.deepEqual(await ctx.store.accessTokens.findStandingByHash(clientToken.tokenHash), { token: clientToken, user: undefined, applicationExists: true });
      assert.equal((await ctx.store.accessTokens.findWithUserByHash(userToken.tokenHash))?.applicationExists, true);
      assert.equal(await ctx.store.accessTokens.findStandingByHash(hash()), undefined);
      await ctx.store.users.update({ ...user, disabled: true });
      assert.deepEqual((await ctx.store.accessTokens.findStandingByHash(userToken.tokenHash))?.user, { disabled: true, name: user.name });
      await ctx.store.users.deleteByName(user.name);
      await ctx.store.applications.deleteByName(app.name);
      for (const t of [userToken, clientToken]) {
        const found = await ctx.store.accessTokens.findStandingByHash(t.tokenHash);
        assert.equal(found?.user, undefined);
        assert.equal(found?.applicationExists, false);
      }
    });

    it("revokes one access token, keeping the first revocation time", async () => {
      const token = anAccessToken();
      await ctx.store.accessTokens.insert(token);
      await ctx.store.accessTokens.revoke(token.tokenHash, T0 + 1);
      await ctx.store.accessTokens.revoke(token.tokenHash, T0 + 2);
      assert.equal((await ctx.store.accessTokens.findByHash(token.tokenHash))?.revokedAt, T0 + 1);
    });

    it("answers lookups made together, each with its own row, however many share a query", async () => {
      const user = aUser();
      await ctx.store.users.insert(user);
      // More than one query's worth (32), some of them a user's.
      const tokens = Array.from({ length: 40 }, (_, i) => anAccessToken({ userId: i % 3 === 0 ? user.id : null }));
      for (const t of tokens) await ctx.store.accessTokens.insert(t);
      const unknown = [hash(), hash()];
      const asked = [...tokens.map((t) => t.tokenHash), ...unknown, tokens[0]!.tokenHash, tokens[39]!.tokenHash];
      const [plain, joined] = await Promise.all([
        Promise.all(asked.map((h) => ctx.store.accessTokens.findByHash(h))),
        Promise.all(asked.map((h) => ctx.store.accessTokens.findWithUserByHash(h))),
      ]);
      const expected = [...tokens, undefined, undefined, tokens[0], tokens[39]];
      assert.deepEqual(plain, expected);
      assert.deepEqual(
        joined,
        expected.map((t) => t && { token: t, user: t.userId ? user : undefined, applicationExists: false }),
      );
    });

    it("answers a lookup that shares its query with a value the database refuses", async () => {
      const token = anAccessToken();
      await ctx.store.accessTokens.insert(token);
      // PostgreSQL refuses a NUL character in text; SQLite finds nothing.
      const [found, refused] = await Promise.allSettled([
        ctx.store.accessTokens.findByHash(token.tokenHash),
        ctx.store.accessTokens.findByHash("nul\u0000hash"),
      ]);
      assert.deepEqual(found, { status: "fulfilled", value: token });
      assert.ok(refused.status === "rejected" || refused.value === undefined);
    });

    it("joins a caller's transaction: a rolled-back insert leaves no row", async () => {
      const token = anAccessToken();
      await assert.rejects(
        ctx.db.transaction(async (trx) => {
          await ctx.store.accessTokens.insert(token, trx);
          throw new Error("roll back");
        }),
        /roll back/,
      );
      assert.equal(await ctx.store.accessTokens.findByHash(token.tokenHash), undefined);
    });
  });

  describe("refresh tokens", () => {
    it("round-trips by hash", async () => {
      const token = aRefreshToken({ consumedAt: T0 + 1, revokedAt: T0 + 2 });
      await ctx.store.refreshTokens.insert(token);
      assert.deepEqual(await ctx.store.refreshTokens.findByHash(token.tokenHash), token);
    });

    it("consumes a live token once, and never a consumed, revoked or expired one", async () => {
      const live = aRefreshToken();
      const revoked = aRefreshToken({ revokedAt: T0 });
      const expired = aRefreshToken({ expiresAt: T0 + 10 });
      for (const t of [live, revoked, expired]) await ctx.store.refreshTokens.insert(t);
      assert.equal(await ctx.store.refreshTokens.consume(live.tokenHash, T0 + 10), true);
      assert.equal((await ctx.store.refreshTokens.findByHash(live.tokenHash))?.consumedAt, T0 + 10);
      assert.equal(await ctx.store.refreshTokens.consume(live.tokenHash, T0 + 11), false);
      assert.equal(await ctx.store.refreshTokens.consume(revoked.tokenHash, T0 + 10), false);
      assert.equal(await ctx.store.refreshTokens.consume(expired.tokenHash, T0 + 10), false);
      assert.equal(await ctx.store.refreshTokens.consume(hash(), T0), false);
    });

    it("lets exactly one of 50 concurrent consumes of one token win", async () => {
      const token = aRefreshToken();
      await ctx.store.refreshTokens.insert(token);
      const results = await Promise.all(Array.from({ length: 50 }, (_, i) => ctx.store.refreshTokens.consume(token.tokenHash, T0 + i)));
      assert.equal(results.filter(Boolean).length, 1);
      const winner = results.indexOf(true);
      assert.equal((await ctx.store.refreshTokens.findByHash(token.tokenHash))?.consumedAt, T0 + winner);
    });
  });

  describe("rotation", () => {
    const successorOf = (old: RefreshTokenRecord) => ({
      access: anAccessToken({ familyId: old.familyId }),
      refresh: aRefreshToken({ familyId: old.familyId }),
    });

    it("records the rows of exactly one of 20 concurrent rotations of one token", async () => {
      const token = aRefreshToken();
      await ctx.store.refreshTokens.insert(token);
      const successors = Array.from({ length: 20 }, () => successorOf(token));
      const results = await Promise.all(successors.map((rows, i) => ctx.store.refreshTokens.rotate(token.tokenHash, T0 + i, rows)));
      assert.equal(results.filter(Boolean).length, 1);
      const winner = results.indexOf(true);
      assert.equal((await ctx.store.refreshTokens.findByHash(token.tokenHash))?.consumedAt, T0 + winner);
      for (const [i, rows] of successors.entries()) {
        assert.equal((await ctx.store.accessTokens.findByHash(rows.access.tokenHash)) !== undefined, i === winner, `access row ${i}`);
        assert.equal((await ctx.store.refreshTokens.findByHash(rows.refresh.tokenHash)) !== undefined, i === winner, `refresh row ${i}`);
      }
    });

    it("of a rotation racing the family's revocation, records nothing or rows the revocation reaches", async () => {
      for (let round = 0; round < 10; round++) {
        const token = aRefreshToken();
        await ctx.store.refreshTokens.insert(token);
        const rows = successorOf(token);
        const [rotated] = await Promise.all([
          ctx.store.refreshTokens.rotate(token.tokenHash, T0 + 1, rows),
          ctx.store.refreshTokens.revokeFamily(token.familyId, T0 + 2),
        ]);
        const [access, refresh] = [await ctx.store.accessTokens.findByHash(rows.access.tokenHash), await ctx.store.refreshTokens.findByHash(rows.refresh.tokenHash)];
        assert.equal(access === undefined && refresh === undefined, !rotated);
        if (rotated) assert.deepEqual([access?.revokedAt, refresh?.revokedAt], [T0 + 2, T0 + 2], `round ${round}: a successor was left live in a revoked family`);
      }
    });

    it("records nothing for a consumed, revoked or expired token", async () => {
      const tokens = [aRefreshToken({ consumedAt: T0 }), aRefreshToken({ revokedAt: T0 }), aRefreshToken({ expiresAt: T0 + 10 })];
      for (const token of tokens) {
        await ctx.store.refreshTokens.insert(token);
        const rows = successorOf(token);
        assert.equal(await ctx.store.refreshTokens.rotate(token.tokenHash, T0 + 10, rows), false);
        assert.equal(await ctx.store.accessTokens.findByHash(rows.access.tokenHash), undefined);
        assert.equal(await ctx.store.refreshTokens.findByHash(rows.refresh.tokenHash), undefined);
      }
    });
  });

  describe("refresh without rotation (FAPI 2.0)", () => {
    it("records the rows of each of 20 concurrent refreshes of one live token, which stays live", async () => {
      const token = aRefreshToken();
      await ctx.store.refreshTokens.insert(token);
      const issued = Array.from({ length: 20 }, () => ({ access: anAccessToken({ familyId: token.familyId }) }));
      const results = await Promise.all(issued.map((rows, i) => ctx.store.refreshTokens.issueKeeping(token.tokenHash, T0 + i, rows)));
      assert.deepEqual(results, issued.map(() => true));
      for (const rows of issued) assert.ok(await ctx.store.accessTokens.findByHash(rows.access.tokenHash));
      assert.deepEqual(await ctx.store.refreshTokens.findByHash(token.tokenHash), token);
    });

    it("records nothing for a consumed, revoked or expired token", async () => {
      for (const token of [aRefreshToken({ consumedAt: T0 }), aRefreshToken({ revokedAt: T0 }), aRefreshToken({ expiresAt: T0 + 10 })]) {
        await ctx.store.refreshTokens.insert(token);
        const rows = { access: anAccessToken({ familyId: token.familyId }) };
        assert.equal(await ctx.store.refreshTokens.issueKeeping(token.tokenHash, T0 + 10, rows), false);
        assert.equal(await ctx.store.accessTokens.findByHash(rows.access.tokenHash), undefined);
      }
    });

    it("of a refresh racing the family's revocation, records nothing or a token the revocation reaches", async () => {
      for (let round = 0; round < 10; round++) {
        const token = aRefreshToken();
        await ctx.store.refreshTokens.insert(token);
        const rows = { access: anAccessToken({ familyId: token.familyId }) };
        const [kept] = await Promise.all([
          ctx.store.refreshTokens.issueKeeping(token.tokenHash, T0 + 1, rows),
          ctx.store.refreshTokens.revokeFamily(token.familyId, T0 + 2),
        ]);
        const access = await ctx.store.accessTokens.findByHash(rows.access.tokenHash);
        assert.equal(access === undefined, !kept);
        if (access) assert.equal(access.revokedAt, T0 + 2, `round ${round}: a token recorded beside the revocation was left live`);
      }
    });
  });

  describe("family revocation", () => {
    it("revokes every access and refresh token of one family, and nothing else", async () => {
      const familyId = randomUUID();
      const access = [anAccessToken({ familyId }), anAccessToken({ familyId })];
      const refresh = [aRefreshToken({ familyId, consumedAt: T0 }), aRefreshToken({ familyId })];
      const bystanderAccess = anAccessToken();
      const familyless = anAccessToken({ familyId: null });
      const bystanderRefresh = aRefreshToken();
      for (const t of [...access, bystanderAccess, familyless]) await ctx.store.accessTokens.insert(t);
      for (const t of [...refresh, bystanderRefresh]) await ctx.store.refreshTokens.insert(t);

      await ctx.store.refreshTokens.revokeFamily(familyId, T0 + 100);
      for (const t of access) assert.equal((await ctx.store.accessTokens.findByHash(t.tokenHash))?.revokedAt, T0 + 100);
      for (const t of refresh) assert.equal((await ctx.store.refreshTokens.findByHash(t.tokenHash))?.revokedAt, T0 + 100);
      assert.equal((await ctx.store.accessTokens.findByHash(bystanderAccess.tokenHash))?.revokedAt, null);
      assert.equal((await ctx.store.accessTokens.findByHash(familyless.tokenHash))?.revokedAt, null);
      assert.equal((await ctx.store.refreshTokens.findByHash(bystanderRefresh.tokenHash))?.revokedAt, null);
      assert.equal(await ctx.store.refreshTokens.consume(refresh[1]!.tokenHash, T0 + 101), false);

      // Revoking again keeps the first revocation time.
      await ctx.store.refreshTokens.revokeFamily(familyId, T0 + 200);
      assert.equal((await ctx.store.refreshTokens.findByHash(refresh[1]!.tokenHash))?.revokedAt, T0 + 100);
    });
  });

  describe("client assertion jtis", () => {
    it("lets exactly one of 50 concurrent uses of one jti through", async () => {
      const key = hash();
      const results = await Promise.all(Array.from({ length: 50 }, () => ctx.store.clientAssertionJtis.useOnce(key, T0 + 60_000, T0)));
      assert.equal(results.filter(Boolean).length, 1);
      assert.equal(await ctx.store.clientAssertionJtis.useOnce(key, T0 + 60_000, T0 + 59_999), false);
    });

    it("of 300 concurrent uses of 100 keys, three each, lets exactly one use of each key through", async () => {
      const keys = Array.from({ length: 100 }, () => hash());
      const uses = keys.flatMap((key) => [key, key, key]);
      const results = await Promise.all(uses.map((key) => ctx.store.clientAssertionJtis.useOnce(key, T0 + 60_000, T0)));
      for (const key of keys) assert.equal(results.filter((ok, i) => ok && uses[i] === key).length, 1, key);
    });

    it("takes a key again once its row has expired", async () => {
      const key = hash();
      assert.equal(await ctx.store.clientAssertionJtis.useOnce(key, T0 + 1000, T0), true);
      assert.equal(await ctx.store.clientAssertionJtis.useOnce(key, T0 + 5000, T0 + 1000), true);
      assert.equal(await ctx.store.clientAssertionJtis.useOnce(key, T0 + 9000, T0 + 4999), false);
    });
  });
});
