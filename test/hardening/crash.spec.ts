import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ensureBuilt } from "../support/cli.js";
import { crashRound } from "../support/crash.js";

/** Rounds here (ms into the load at which the kill comes); `npm run crash` runs 20 or more at random moments. */
const ROUNDS = [0, 700];

describe("crash consistency: SIGKILL under issuance load, restart on the same SQLite file", function () {
  this.timeout(120_000); // covers a rebuild of dist/ when the sources are newer
  let dir: string;
  before(() => {
    ensureBuilt();
    dir = mkdtempSync(join(tmpdir(), "identity-crash-"));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  for (const [round, killAfterMs] of ROUNDS.entries()) {
    it(`keeps every promise made before a kill at ${killAfterMs} ms: issued tokens active, no code or refresh token used twice, integrity ok`, async () => {
      const report = await crashRound(dir, round, killAfterMs);
      assert.deepEqual(report.violations, []);
      assert.equal(report.integrity, "ok");
      assert.ok(report.issuedAccessTokens > 0 && report.usedRefreshTokens > 0 && report.redeemedCodes > 0, "the load made promises of every kind");
    });
  }
});
