import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { MIGRATIONS } from "../../src/store/db.js";
import type { AuthorizationCodeRecord } from "../../src/store/authorizationCodes.js";
import { describeEachBackend } from "../support/databases.js";
import { hash, T0 } from "../support/storeFixtures.js";

const aCode = (claims: string | null): AuthorizationCodeRecord => ({
  codeHash: hash(), familyId: randomUUID(), clientId: "client", userId: randomUUID(), redirectUri: "https://app.example/cb",
  scope: "openid", nonce: null, codeChallenge: null, codeChallengeMethod: null, authTime: T0 / 1000, claims,
  createdAt: T0, expiresAt: T0 + 60_000, consumedAt: null, replayedAt: null,
});

describeEachBackend("migration 013: the claims request kept with a code", (ctx) => {
  const UNDO_013 = { ...MIGRATIONS, name: "013_code_claims" };
  const codes = () => ctx.store.authorizationCodes;

  it("adds the column, keeps every row, and is undone", async () => {
    const asked = aCode('{"id_token":{"email":{"essential":true}}}');
    const plain = aCode(null);
    for (const c of [asked, plain]) await codes().insert(c);
    assert.deepEqual(await codes().findByHash(asked.codeHash), asked);

    await ctx.db.migrate.down(UNDO_013);
    assert.equal(await ctx.db.schema.hasColumn("authorization_codes", "claims"), false);
    assert.equal((await ctx.db("authorization_codes").where({ code_hash: plain.codeHash }).first()).scope, "openid");

    await ctx.db.migrate.latest(MIGRATIONS);
    assert.deepEqual(await codes().findByHash(plain.codeHash), plain);
    assert.deepEqual(await codes().findByHash(asked.codeHash), { ...asked, claims: null }, "undone, the claims went with the column");
  });
});
