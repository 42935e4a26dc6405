import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { optionsTable, parseServeConfig, SERVE_OPTIONS } from "./../../src/app/config.js";

describe("serve configuration reference", () => {
  it("docs/configuration.md's options table is the one generated from the option list", () => {
    const reference = readFileSync(new URL("../../docs/configuration.md", import.meta.url), "utf8");
    const match = /<!-- options:start -->\n([\s\S]*?)<!-- options:end -->/.exec(reference);
    assert.ok(match, "docs/configuration.md has no <!-- options:start --> ... <!-- options:end --> section");
    assert.equal(match[1], optionsTable(), "the options table is stale: paste optionsTable() (identity serve --help) between the markers");
  });

  it("the table has one row per option, each naming its flag and variable", () => {
    const rows = optionsTable().trim().split("\n").slice(2);
    assert.equal(rows.length, SERVE_OPTIONS.length);
    for (const [i, option] of SERVE_OPTIONS.entries()) {
      assert.ok(rows[i]!.startsWith(`| \`--${option.flag}\` | \`${option.env}\` |`), rows[i]);
    }
  });

  it("defaults the operations options, flags beating variables", () => {
    const defaults = parseServeConfig([], {});
    assert.equal(defaults.metrics, "same");
    assert.equal(defaults.logLevel, "info");
    assert.equal(defaults.logPretty, undefined, "unset: serve decides by its terminal");
    assert.equal(defaults.shutdownTimeoutSeconds, 10);
    assert.equal(defaults.keyActivationDelaySeconds, 600);
    const env = { LOG_LEVEL: "debug", IDENTITY_METRICS: "off", IDENTITY_LOG_PRETTY: "true" };
    const fromEnv = parseServeConfig([], env);
    assert.deepEqual([fromEnv.logLevel, fromEnv.metrics, fromEnv.logPretty], ["debug", "off", true]);
    const fromFlags = parseServeConfig(["--log-level", "warn", "--metrics", "9464", "--shutdown-timeout-seconds", "0"], env);
    assert.deepEqual([fromFlags.logLevel, fromFlags.metrics, fromFlags.shutdownTimeoutSeconds], ["warn", { port: 9464 }, 0]);
    assert.equal(parseServeConfig(["--log-pretty"], {}).logPretty, true);
    assert.equal(parseServeConfig([], { IDENTITY_LOG_PRETTY: "false" }).logPretty, false, "JSON asked for");
  });

  it("refuses values it cannot use, naming the option", () => {
    assert.throws(() => parseServeConfig(["--metrics", "on"], {}), /--metrics \/ IDENTITY_METRICS: invalid port: on/);
    assert.throws(() => parseServeConfig([], { LOG_LEVEL: "loud" }), /--log-level \/ LOG_LEVEL: expected one of/);
    assert.throws(() => parseServeConfig([], { IDENTITY_LOG_PRETTY: "maybe" }), /IDENTITY_LOG_PRETTY: expected true or false/);
    assert.throws(() => parseServeConfig(["--shutdown-timeout-seconds=-1"], {}), /--shutdown-timeout-seconds \/ IDENTITY_SHUTDOWN_TIMEOUT_SECONDS: must be a whole number of at least 0/);
  });
});
