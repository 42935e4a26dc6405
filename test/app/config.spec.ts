import assert from "node:assert/strict";
import { parseServeConfig } from "./../../src/app/config.js";
import { startTestServer } from "./../support/server.js";

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

describe("configuration edges", () => {
  it("secret containing <: taken as it is; only a value that is all a placeholder in angle brackets is refused, with a clear error", () => {
    const secret = "a<b>c-real-secret-with-angle-brackets<!";
    const admin = "<not-a-placeholder>-but-a-real-admin-token-0123456789";
    const config = parseServeConfig(["--secret-key", secret], { IDENTITY_ADMIN_TOKEN: admin });
    assert.equal(config.secretKey, secret);
    assert.equal(config.adminToken, admin);
    for (const [args, env, option] of [
      [["--admin-token", "<your-admin-token>"], {}, "--admin-token / IDENTITY_ADMIN_TOKEN"],
      [[], { IDENTITY_SECRET_KEY: "<your-secret>" }, "--secret-key / IDENTITY_SECRET_KEY"],
      [[], { DATABASE_URL: " <database-url> " }, "--database / DATABASE_URL"],
    ] as const) {
      assert.throws(() => parseServeConfig([...args], env), (err: Error) => {
        assert.match(err.message, new RegExp(`^${option}: .*placeholder`));
        return true;
      });
    }
    // The issuer's documented default names its port in angle brackets: it is no value, and stays unset.
    assert.equal(parseServeConfig([], {}).issuer, undefined);
  });

  it("admin token shorter than 32 characters: refused by the options, and by the server at start, saying why", async () => {
    assert.throws(() => parseServeConfig(["--admin-token", "short-admin-token"], {}), /--admin-token \/ IDENTITY_ADMIN_TOKEN: must be at least 32 characters/);
    assert.throws(() => parseServeConfig([], { IDENTITY_ADMIN_TOKEN: "x".repeat(31) }), /at least 32 characters/);
    assert.equal(parseServeConfig([], { IDENTITY_ADMIN_TOKEN: "x".repeat(32) }).adminToken, "x".repeat(32));
    await assert.rejects(startTestServer({ overrides: { adminToken: "x".repeat(31) } }), /admin token must be at least 32 characters/);
  });

  it("reads --metrics-token and --metrics-host", () => {
    assert.deepEqual(
      pickMetrics(parseServeConfig(["--metrics", "9100", "--metrics-host", "10.0.0.5"], { IDENTITY_METRICS_TOKEN: "scraper-token" })),
      { metrics: { port: 9100 }, metricsHost: "10.0.0.5", metricsToken: "scraper-token" },
    );
    assert.deepEqual(pickMetrics(parseServeConfig([], {})), { metrics: "same", metricsHost: undefined, metricsToken: undefined });
  });
});

const pickMetrics = ({ metrics, metricsHost, metricsToken }: ReturnType<typeof parseServeConfig>) => ({ metrics, metricsHost, metricsToken });
