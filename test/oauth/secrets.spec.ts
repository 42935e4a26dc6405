import assert from "node:assert/strict";
import {
  DUMMY_GENERATED_SECRET_HASH,
  DUMMY_SECRET_HASH,
  hashGeneratedSecret,
  hashSecret,
  isFastSecretHash,
  randomToken,
  SCRYPT_COST,
  verifySecret,
} from "../../src/oauth/secrets.js";
import { TEST_SECRET_HASH_COST } from "../support/server.js";

const costOf = (hash: string) => {
  const [scheme, N, r, p] = hash.split("$");
  return { scheme, N: Number(N), r: Number(r), p: Number(p) };
};

describe("secret hashing", () => {
  // Two scrypt runs at full cost: the default parameters fit the memory limit.
  it("hashes with scrypt N=2^15, r=8, p=1 by default, and verifies it", async () => {
    const hash = await hashSecret("pw-alice-123");
    assert.deepEqual(costOf(hash), { scheme: "scrypt", N: 32768, r: 8, p: 1 });
    assert.equal(await verifySecret("pw-alice-123", hash), true);
  });

  it("verifies at the cost a hash records, and only the right secret", async () => {
    const hash = await hashSecret("secret-1", TEST_SECRET_HASH_COST);
    assert.deepEqual(costOf(hash), { scheme: "scrypt", ...TEST_SECRET_HASH_COST });
    assert.equal(await verifySecret("secret-1", hash), true);
    assert.equal(await verifySecret("secret-2", hash), false);
  });

  it("checks unknown accounts against a hash of the default cost, so they take as long as known ones", () => {
    assert.deepEqual(costOf(DUMMY_SECRET_HASH), { scheme: "scrypt", ...SCRYPT_COST });
  });

  it("hashes a generated secret with SHA-256 under its own prefix, verifies it, and keeps verifying scrypt hashes stored before", async () => {
    const secret = randomToken();
    const fast = hashGeneratedSecret(secret);
    assert.match(fast, /^sha256\$[A-Za-z0-9_-]{43}$/);
    assert.ok(!fast.includes(secret));
    assert.ok(isFastSecretHash(fast) && isFastSecretHash(DUMMY_GENERATED_SECRET_HASH));
    assert.equal(await verifySecret(secret, fast), true);
    assert.equal(await verifySecret(`${secret}x`, fast), false);
    assert.equal(await verifySecret(secret, DUMMY_GENERATED_SECRET_HASH), false);
    // A client secret stored as scrypt by an earlier version.
    const stored = await hashSecret(secret, TEST_SECRET_HASH_COST);
    assert.ok(!isFastSecretHash(stored));
    assert.equal(await verifySecret(secret, stored), true);
    assert.equal(await verifySecret("sha256$" + secret, stored), false);
  });
});
