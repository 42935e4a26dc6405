import assert from "node:assert/strict";
import { parseServeConfig } from "../src/config.js";

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
});
