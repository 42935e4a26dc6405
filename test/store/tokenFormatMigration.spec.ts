import assert from "node:assert/strict";
import { MIGRATIONS } from "../../src/store/db.js";
import { describeEachBackend } from "../support/databases.js";
import { hash, T0 } from "../support/storeFixtures.js";

describeEachBackend("migration 014: token format, and userinfo claims of refresh tokens", (ctx) => {
  const ONLY_014 = { ...MIGRATIONS, name: "014_token_format" };

  it("gives every application JWT-Standard and every refresh token no userinfo claims, keeps the rows, and is undone", async () => {
    const name = `app-${hash().slice(0, 12)}`;
    const refreshHash = hash();
    await ctx.db.migrate.down(ONLY_014);
    await ctx.db("applications").insert({
      id: hash().slice(0, 36), name, client_id: `client-${name}`, client_secret_hash: "x", redirect_uris: "[]", grant_types: "[]",
      expire_in_hours: 1, refresh_expire_in_hours: 0, providers: "[]", created_at: T0, updated_at: T0,
    });
    await ctx.db("refresh_tokens").insert({
      token_hash: refreshHash, family_id: hash().slice(0, 36), client_id: `client-${name}`, user_id: null, scope: "openid",
      auth_time: T0 / 1000, issued_at: T0, expires_at: T0 + 3_600_000, consumed_at: null, revoked_at: null,
    });
    await ctx.db.migrate.latest(MIGRATIONS);
    assert.equal((await ctx.store.applications.findByName(name))?.tokenFormat, "JWT-Standard");
    assert.equal((await ctx.store.refreshTokens.findByHash(refreshHash))?.userinfoClaims, undefined);
    assert.equal((await ctx.db("refresh_tokens").where({ token_hash: refreshHash }).first())?.userinfo_claims, null);
    await ctx.db.migrate.down(ONLY_014);
    assert.equal((await ctx.db("applications").where({ name }).first())?.token_format, undefined);
    assert.equal((await ctx.db("refresh_tokens").where({ token_hash: refreshHash }).first())?.userinfo_claims, undefined);
    await ctx.db.migrate.latest(MIGRATIONS);
  });
});
