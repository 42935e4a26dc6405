import assert from "node:assert/strict";
import { parseServeConfig } from "./../../src/app/config.js";

describe("serve configuration", () => {
  it("takes the documented defaults for the pool, timeouts, key reload and cleanup", () => {
    const config = parseServeConfig([], {});
    assert.equal(config.dbPoolMin, 0);
    assert.equal(config.dbPoolMax, 10);
    assert.equal(config.dbConnectTimeoutMs, 5000);
    assert.equal(config.dbStatementTimeoutMs, 15000);
    assert.equal(config.keyReloadSeconds, 10);
    assert.equal(config.cleanupIntervalSeconds, 60);
    assert.equal(config.cleanupBatchSize, 1000);
  });

  it("lets a flag beat its environment variable", () => {
    const config = parseServeConfig(["--db-pool-max", "20"], { IDENTITY_DB_POOL_MAX: "30", IDENTITY_DB_POOL_MIN: "2", IDENTITY_CLEANUP_INTERVAL_SECONDS: "0" });
    assert.equal(config.dbPoolMax, 20);
    assert.equal(config.dbPoolMin, 2);
    assert.equal(config.cleanupIntervalSeconds, 0);
  });

  it("refuses a pool too small for the startup lock and negative numbers", () => {
    assert.throws(() => parseServeConfig(["--db-pool-max", "1"], {}), /--db-pool-max \/ IDENTITY_DB_POOL_MAX: must be a whole number of at least 2/);
    assert.throws(() => parseServeConfig(["--key-reload-seconds", "-1"], {}), /--key-reload-seconds/);
  });

  it("reads the federation options: IDENTITY_SECRET_KEY of at least 32 characters, a 10 s provider timeout by default", () => {
    assert.equal(parseServeConfig([], {}).secretKey, undefined);
    assert.equal(parseServeConfig([], {}).federationTimeoutMs, 10_000);
    const key = "k".repeat(32);
    assert.equal(parseServeConfig([], { IDENTITY_SECRET_KEY: key, IDENTITY_FEDERATION_TIMEOUT_MS: "2500" }).secretKey, key);
    assert.equal(parseServeConfig(["--federation-timeout-ms", "750"], { IDENTITY_FEDERATION_TIMEOUT_MS: "2500" }).federationTimeoutMs, 750);
    assert.throws(() => parseServeConfig([], { IDENTITY_SECRET_KEY: "short" }), /--secret-key \/ IDENTITY_SECRET_KEY: must be at least 32 characters/);
    assert.throws(() => parseServeConfig(["--federation-timeout-ms", "0"], {}), /--federation-timeout-ms/);
  });
});
