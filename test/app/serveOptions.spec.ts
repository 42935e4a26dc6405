import assert from "node:assert/strict";
import { parseServeConfig } from "./../../src/app/config.js";

// The option names of issue 2 are a contract other tests and scripts rely on.
describe("serve options: the issue's names, defaults and precedence", () => {
  const pick = ({ port, host, database, issuer, configFile }: ReturnType<typeof parseServeConfig>) => ({ port, host, database, issuer, configFile });

  it("takes the documented defaults (the issuer follows the port once listening)", () => {
    assert.deepEqual(pick(parseServeConfig([], {})), { port: 8000, host: "127.0.0.1", database: "./data/identity.sqlite", issuer: undefined, configFile: undefined });
  });

  it("reads each option from its environment variable, and a flag beats it", () => {
    const env = { PORT: "9000", HOST: "0.0.0.0", DATABASE_URL: "env.sqlite", IDENTITY_ISSUER: "https://env.example/", IDENTITY_CONFIG: "env.json" };
    assert.deepEqual(pick(parseServeConfig([], env)), {
      port: 9000, host: "0.0.0.0", database: "env.sqlite", issuer: "https://env.example", configFile: "env.json",
    });
    const flags = ["--port", "0", "--host", "::1", "--database", ":memory:", "--issuer", "https://flag.example", "--config", "flag.json"];
    assert.deepEqual(pick(parseServeConfig(flags, env)), {
      port: 0, host: "::1", database: ":memory:", issuer: "https://flag.example", configFile: "flag.json",
    });
    // Admin tokens of at least 32 characters since issue 24 (they were "flag" and "env").
    const [flag, variable] = ["flag".padEnd(32, "-"), "env".padEnd(32, "-")];
    assert.equal(parseServeConfig(["--admin-token", flag], { IDENTITY_ADMIN_TOKEN: variable }).adminToken, flag);
  });

  it("names the option of a bad value, and refuses unknown flags", () => {
    assert.throws(() => parseServeConfig(["--port", "http"], {}), /--port \/ PORT: invalid port/);
    assert.throws(() => parseServeConfig([], { PORT: "70000" }), /--port \/ PORT/);
    assert.throws(() => parseServeConfig(["--issuer", "ftp://x"], {}), /--issuer \/ IDENTITY_ISSUER/);
    assert.throws(() => parseServeConfig(["--colour", "blue"], {}), /colour/);
  });
});
