import assert from "node:assert/strict";
import type { Db } from "../../src/store/db.js";
import { createStore, type Store } from "../../src/store/index.js";
import type { AccessTokenRecord } from "../../src/store/tokens.js";
import { openTestDb } from "../support/databases.js";

const key = (kid: string) => ({ kid, alg: "RS256", privateJwk: "{}", publicJwk: "{}", createdAt: 0, activeFrom: 0, retiredAt: null });
const token = (hash: string, kid: string | null, expiresAt: number): AccessTokenRecord => ({
  tokenHash: hash,
  jti: hash,
  familyId: "f",
  clientId: "c",
  userId: null,
  scope: "",
  issuedAt: 0,
  expiresAt,
  revokedAt: null,
  kid,
});

describe("signing key retirement in the store", () => {
  let db: Db;
  let close: () => Promise<void>;
  let store: Store;
  beforeEach(async () => {
    ({ db, close } = await openTestDb());
    store = createStore(db);
    await store.signingKeys.insert(key("old"));
  });
  afterEach(() => close());

  const retiredAt = async () => (await store.signingKeys.list())[0]!.retiredAt;

  it("retires a key only once every token it signed has expired, revoked ones included", async () => {
    await store.accessTokens.insert({ ...token("a", "old", 2000), revokedAt: 500 });
    await store.accessTokens.insert(token("b", "other", 9000));
    assert.equal(await store.signingKeys.retireIfUnused("old", 1999), false);
    assert.equal(await retiredAt(), null);
    assert.equal(await store.signingKeys.retireIfUnused("old", 2000), true);
    assert.equal(await retiredAt(), 2000);
    assert.equal(await store.signingKeys.retireIfUnused("old", 3000), false, "retired once");
    assert.equal(await retiredAt(), 2000);
  });

  it("waits for an ID token issued on its own, which has no token row", async () => {
    await store.signingKeys.holdUntil("old", 6000);
    await store.signingKeys.holdUntil("old", 4000); // an earlier bound does not shorten the hold
    assert.equal(await store.signingKeys.retireIfUnused("old", 5999), false);
    assert.equal(await store.signingKeys.retireIfUnused("old", 6000), true);
  });

  it("waits for tokens whose key was not recorded (issued before keys were tracked)", async () => {
    await store.accessTokens.insert(token("legacy", null, 5000));
    assert.equal(await store.signingKeys.retireIfUnused("old", 4000), false);
    assert.equal(await store.signingKeys.retireIfUnused("old", 5000), true);
  });
});
