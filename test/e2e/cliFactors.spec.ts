import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cleanEnv, ensureBuilt, runCli } from "../support/cli.js";
import { enrolTotp } from "../support/factors.js";
import { startTestServer, TEST_USER } from "../support/server.js";

/** What an admin does when a user loses a device (docs/second-factors.md), from the command line. */
describe("identity user show / update --reset-mfa (issue #46 §4)", function () {
  this.timeout(120_000);
  const database = join(mkdtempSync(join(tmpdir(), "identity-cli-factors-")), "id.sqlite");

  before(async () => {
    ensureBuilt();
    const server = await startTestServer({ database });
    try {
      await enrolTotp(server, TEST_USER.name);
    } finally {
      await server.close();
    }
  });

  const run = async (args: string[]) => {
    const cli = runCli([...args, "--database", database], cleanEnv());
    const code = await cli.exited;
    assert.equal(code, 0, cli.stderr());
    return JSON.parse(cli.stdout());
  };

  it("lists the factors (type, name, created) and the recovery codes left, without a secret", async () => {
    const shown = await run(["user", "show", "--name", TEST_USER.name]);
    assert.equal(shown.factors.length, 1);
    assert.deepEqual(Object.keys(shown.factors[0]).sort(), ["createdTime", "id", "name", "type"]);
    assert.equal(shown.factors[0].type, "totp");
    assert.equal(shown.recoveryCodesLeft, 10);
  });

  it("removes every factor and recovery code with --reset-mfa", async () => {
    const updated = await run(["user", "update", "--name", TEST_USER.name, "--reset-mfa"]);
    assert.deepEqual([updated.factors, updated.recoveryCodesLeft], [[], 0]);
    const shown = await run(["user", "show", "--name", TEST_USER.name]);
    assert.deepEqual(shown.factors, []);
  });
});
