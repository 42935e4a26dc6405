import assert from "node:assert/strict";
import { MIGRATIONS } from "../../src/store/db.js";
import { describeEachBackend } from "../support/databases.js";
import { anAccessToken, hash, T0 } from "../support/storeFixtures.js";
import type { RefreshTokenRecord } from "../../src/store/tokens.js";

const aRefreshToken = (): RefreshTokenRecord => ({
  tokenHash: hash(), familyId: hash().slice(0, 36), clientId: "client", userId: hash().slice(0, 36), scope: "openid",
  authTime: T0 / 1000, issuedAt: T0, expiresAt: T0 + 3_600_000, consumedAt: null, revokedAt: null,
});

// Later migrations only add columns and indexes to access_tokens (SQLite's rebuild keeps them), so 009 is undone on its own.
const UNDO_009 = { ...MIGRATIONS, name: "009_tokens_without_family" };

describeEachBackend("migration 009: access tokens of no family", (ctx) => {
  const tokens = () => ctx.store.accessTokens;

  it("keeps every row when it is applied, and when it is undone", async () => {
    await ctx.db.migrate.down(UNDO_009);
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

    await ctx.db.migrate.down(UNDO_009);
    for (const t of earlier) assert.deepEqual(await tokens().findByHash(t.tokenHash), t);
    assert.deepEqual(await tokens().findByHash(familyless.tokenHash), { ...familyless, familyId: familyless.jti }, "a family of its own");
    await ctx.db.migrate.latest(MIGRATIONS);
  });
});

describeEachBackend("migration 012: refresh tokens found by user", (ctx) => {
  const LAST = { ...MIGRATIONS, name: "012_refresh_tokens_by_user" };
  const indexes = async (): Promise<string[]> => {
    if (ctx.backend.name === "PostgreSQL") {
      const result = await ctx.db.raw("select indexname from pg_indexes where tablename = 'refresh_tokens' and schemaname = current_schema()");
      return result.rows.map((r: { indexname: string }) => r.indexname);
    }
    return (await ctx.db.raw("select name from sqlite_master where type = 'index' and tbl_name = 'refresh_tokens'")).map((r: { name: string }) => r.name);
  };

  it("adds the index by user, keeps every row, and is undone", async () => {
    const token = aRefreshToken();
    await ctx.store.refreshTokens.insert(token);
    assert.ok((await indexes()).includes("refresh_tokens_user_index"));
    await ctx.db.migrate.down(LAST);
    assert.ok(!(await indexes()).includes("refresh_tokens_user_index"));
    assert.deepEqual(await ctx.store.refreshTokens.findByHash(token.tokenHash), token);
    await ctx.db.migrate.latest(MIGRATIONS);
    assert.ok((await indexes()).includes("refresh_tokens_user_index"));
    assert.deepEqual(await ctx.store.refreshTokens.findByHash(token.tokenHash), token);
  });
});

describeEachBackend("migration 015: application allowed origins", (ctx) => {
  const LAST = { ...MIGRATIONS, name: "015_application_allowed_origins" };

  it("gives every application an empty list of allowed origins, keeps the rows, and is undone", async () => {
    const name = `app-${hash().slice(0, 12)}`;
    await ctx.db.migrate.down(LAST);
    await ctx.db("applications").insert({
      id: hash().slice(0, 36), name, client_id: `client-${name}`, client_secret_hash: "x", redirect_uris: "[]", grant_types: "[]",
      expire_in_hours: 1, refresh_expire_in_hours: 0, providers: "[]", created_at: T0, updated_at: T0,
    });
    await ctx.db.migrate.latest(MIGRATIONS);
    assert.deepEqual((await ctx.store.applications.findByName(name))?.allowedOrigins, []);
    await ctx.db.migrate.down(LAST);
    assert.equal((await ctx.db("applications").where({ name }).first())?.allowed_origins, undefined);
    await ctx.db.migrate.latest(MIGRATIONS);
  });
});

describeEachBackend("migration 078: access tokens found by user", (ctx) => {
  const LAST = { ...MIGRATIONS, name: "078_access_tokens_by_user" };
  const onPostgres = () => ctx.backend.name === "PostgreSQL";
  /** How the backend would run a revocation of a user's access tokens of one client (revocations.ts), with a scan priced out on PostgreSQL. */
  const plan = async (): Promise<string> => {
    const { sql, bindings } = ctx.db("access_tokens").where({ user_id: "u", client_id: "c" }).whereNull("revoked_at").update({ revoked_at: T0 }).toSQL();
    if (!onPostgres()) return (await ctx.db.raw(`explain query plan ${sql}`, bindings)).map((r: { detail: string }) => r.detail).join("\n");
    return ctx.db.transaction(async (trx) => {
      await trx.raw("set local enable_seqscan = off");
      return (await trx.raw(`explain ${sql}`, bindings)).rows.map((r: Record<string, string>) => r["QUERY PLAN"]).join("\n");
    });
  };
  const definition = async (): Promise<string | undefined> => {
    if (onPostgres()) {
      const result = await ctx.db.raw("select indexdef from pg_indexes where indexname = 'access_tokens_user_index' and schemaname = current_schema()");
      return result.rows[0]?.indexdef;
    }
    return (await ctx.db.raw("select sql from sqlite_master where type = 'index' and name = 'access_tokens_user_index'"))[0]?.sql;
  };

  it("adds an index by user, of tokens that have one, which the revocations use; keeps every row, and is undone", async () => {
    const tokens = [anAccessToken(), anAccessToken({ userId: null, familyId: null })];
    for (const t of tokens) await ctx.store.accessTokens.insert(t);
    assert.match((await definition()) ?? "", /where .?user_id.? is not null/i, "a client's own token is left out of it");
    assert.match(await plan(), /access_tokens_user_index/);
    await ctx.db.migrate.down(LAST);
    assert.equal(await definition(), undefined);
    assert.doesNotMatch(await plan(), /access_tokens_user_index/);
    for (const t of tokens) assert.deepEqual(await ctx.store.accessTokens.findByHash(t.tokenHash), t);
    await ctx.db.migrate.latest(MIGRATIONS);
    assert.match(await plan(), /access_tokens_user_index/);
  });
});

describeEachBackend("migration 079: how an opaque token's user signed in", (ctx) => {
  const LAST = { ...MIGRATIONS, name: "079_opaque_authentication" };

  it("adds auth_time, acr and amr to access tokens, keeps every row, and is undone", async () => {
    const signedIn = anAccessToken({ authTime: T0 / 1000, acr: "mfa", amr: "pwd otp mfa" });
    const plain = anAccessToken({ userId: null, familyId: null });
    for (const t of [signedIn, plain]) await ctx.store.accessTokens.insert(t);
    await ctx.db.migrate.down(LAST);
    const { authTime: _t, acr: _c, amr: _a, ...without } = signedIn;
    assert.deepEqual(await ctx.store.accessTokens.findByHash(signedIn.tokenHash), without);
    assert.deepEqual(await ctx.store.accessTokens.findByHash(plain.tokenHash), plain);
    await ctx.db.migrate.latest(MIGRATIONS);
    assert.deepEqual(await ctx.store.accessTokens.findByHash(signedIn.tokenHash), without, "what was dropped stays NULL");
    await ctx.store.accessTokens.insert({ ...signedIn, tokenHash: hash() });
  });
});
