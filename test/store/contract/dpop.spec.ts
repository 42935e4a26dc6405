import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { anAccessToken, hash, HOUR, T0 } from "../../support/storeFixtures.js";
import { aRefreshToken, anApplication, aUser } from "./fixtures.js";
import { describeEachBackend } from "../../support/databases.js";

const JKT = "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I";

describeEachBackend("storage contract: DPoP", (ctx) => {
  describe("DPoP proof jtis", () => {
    it("lets exactly one of 50 concurrent uses of one jti through", async () => {
      const key = hash();
      const results = await Promise.all(Array.from({ length: 50 }, () => ctx.store.dpopProofJtis.useOnce(key, T0 + 70_000, T0)));
      assert.equal(results.filter(Boolean).length, 1);
      assert.equal(await ctx.store.dpopProofJtis.useOnce(key, T0 + 70_000, T0 + 69_999), false);
    });

    it("takes a key again once its row has expired", async () => {
      const key = hash();
      assert.equal(await ctx.store.dpopProofJtis.useOnce(key, T0 + 1000, T0), true);
      assert.equal(await ctx.store.dpopProofJtis.useOnce(key, T0 + 5000, T0 + 1000), true);
      assert.equal(await ctx.store.dpopProofJtis.useOnce(key, T0 + 9000, T0 + 4999), false);
    });
  });

  describe("DPoP nonce secret", () => {
    it("agrees on one secret among concurrent first calls", async () => {
      const candidates = Array.from({ length: 10 }, () => hash());
      const secrets = await Promise.all(candidates.map((c) => ctx.store.dpopNonceSecret.secret(c, T0)));
      assert.equal(new Set(secrets).size, 1);
      assert.ok(candidates.includes(secrets[0]!));
      assert.equal(await ctx.store.dpopNonceSecret.secret(hash(), T0 + HOUR), secrets[0]);
    });
  });

  describe("tokens and codes bound to a key", () => {
    it("round-trips the thumbprint of a bound access token, refresh token and code, and none for unbound ones", async () => {
      const app = anApplication({ dpopBoundAccessTokens: true });
      const user = aUser();
      await ctx.store.applications.insert(app);
      await ctx.store.users.insert(user);
      assert.equal((await ctx.store.applications.findByClientId(app.clientId))?.dpopBoundAccessTokens, true);

      const bound = anAccessToken({ clientId: app.clientId, userId: user.id, dpopJkt: JKT });
      const unbound = anAccessToken({ clientId: app.clientId, userId: user.id });
      for (const t of [bound, unbound]) await ctx.store.accessTokens.insert(t);
      assert.deepEqual(await ctx.store.accessTokens.findByHash(bound.tokenHash), bound);
      assert.deepEqual(await ctx.store.accessTokens.findByHash(unbound.tokenHash), unbound);
      assert.equal((await ctx.store.accessTokens.findWithUserByHash(bound.tokenHash))?.token.dpopJkt, JKT);
      assert.equal((await ctx.store.accessTokens.findStandingByHash(bound.tokenHash))?.token.dpopJkt, JKT);

      const refresh = aRefreshToken({ dpopJkt: JKT });
      await ctx.store.refreshTokens.insert(refresh);
      assert.deepEqual(await ctx.store.refreshTokens.findByHash(refresh.tokenHash), refresh);

      const code = {
        codeHash: hash(), familyId: randomUUID(), clientId: app.clientId, userId: user.id, redirectUri: "https://app.example/cb", scope: "openid",
        nonce: null, codeChallenge: null, codeChallengeMethod: null, authTime: T0 / 1000, claims: null, dpopJkt: JKT,
        createdAt: T0, expiresAt: T0 + 60_000, consumedAt: null, replayedAt: null,
      };
      await ctx.store.authorizationCodes.insert(code);
      assert.deepEqual(await ctx.store.authorizationCodes.findByHash(code.codeHash), code);
    });
  });
});
