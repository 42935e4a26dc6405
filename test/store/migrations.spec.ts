import assert from "node:assert/strict";
import { MIGRATIONS } from "../../src/store/db.js";
import { describeEachBackend } from "../support/databases.js";
import { anAccessToken } from "../support/storeFixtures.js";

describeEachBackend("migration 009: access tokens of no family", (ctx) => {
  const tokens = () => ctx.store.accessTokens;

  it("keeps every row when it is applied, and when it is undone", async () => {
    await ctx.db.migrate.down(MIGRATIONS);
    const earlier = [anAccessToken({ userId: null }), anAccessToken({ kid: "k1", revokedAt: 1_750_000_100_000 })];
    for (const t of earlier) await tokens().insert(t);
    await assert.rejects(tokens().insert(anAccessToken({ familyId: null })), "before it, every access token has a family");

    await ctx.db.migrate.latest(MIGRATIONS);
    for (const t of earlier) assert.deepEqual(await tokens().findByHash(t.tokenHash), t);
    const familyless = anAccessToken({ familyId: null });
    await tokens().insert(familyless);
    assert.deepEqual(await tokens().findByHash(familyless.tokenHash), familyless);
    // jti is no longer an index of its own (nothing looks tokens up by it).
    const sameJti = anAccessToken({ jti: familyless.jti });
    await tokens().insert(sameJti);
    await ctx.db("access_tokens").where({ token_hash: sameJti.tokenHash }).delete();

    await ctx.db.migrate.down(MIGRATIONS);
    for (const t of earlier) assert.deepEqual(await tokens().findByHash(t.tokenHash), t);
    assert.deepEqual(await tokens().findByHash(familyless.tokenHash), { ...familyless, familyId: familyless.jti }, "a family of its own");
    await ctx.db.migrate.latest(MIGRATIONS);
  });
});
