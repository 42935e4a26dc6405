import assert from "node:assert/strict";
import knex from "knex";
import { asOAuthError } from "../../src/oauth/errors.js";
import { openDb } from "../../src/store/db.js";
import { isStoreUnavailable, isUniqueViolation } from "../../src/store/errors.js";
import { openTestDb } from "../support/databases.js";

// Real driver errors, no PostgreSQL server needed: which failures mean "retry later".
describe("storage errors that mean the database is unavailable", () => {
  it("treats a refused PostgreSQL connection as temporarily_unavailable", async () => {
    const err = await openDb({ url: "postgres://postgres@127.0.0.1:1/test", connectTimeoutMs: 1000, log: () => {} }).then(
      () => assert.fail("connected to port 1"),
      (e: unknown) => e,
    );
    assert.equal(isStoreUnavailable(err), true);
    assert.equal(asOAuthError(err)?.code, "temporarily_unavailable");
  });

  it("treats an exhausted pool (acquire timeout) as temporarily_unavailable", async () => {
    const db = knex({ client: "sqlite3", connection: { filename: ":memory:" }, useNullAsDefault: true, pool: { min: 1, max: 1 }, acquireConnectionTimeout: 50, log: { warn() {}, error() {}, debug() {}, deprecate() {} } });
    try {
      let err: unknown;
      await db.transaction(async () => {
        err = await db.raw("select 1").then(() => undefined, (e: unknown) => e);
      });
      assert.equal((err as Error).name, "KnexTimeoutError");
      assert.equal(asOAuthError(err)?.code, "temporarily_unavailable");
    } finally {
      await db.destroy();
    }
  });

  it("leaves constraint violations and bugs alone", async () => {
    const { db, close } = await openTestDb();
    try {
      const row = { kid: "k", alg: "RS256", private_jwk: "{}", public_jwk: "{}", created_at: 1, active_from: 1 };
      await db("signing_keys").insert(row);
      const err = await db("signing_keys").insert(row).then(() => undefined, (e: unknown) => e);
      assert.equal(isUniqueViolation(err), true);
      assert.equal(isStoreUnavailable(err), false);
      assert.equal(asOAuthError(err), undefined);
      assert.equal(asOAuthError(new TypeError("x is undefined")), undefined);
    } finally {
      await close();
    }
  });
});
