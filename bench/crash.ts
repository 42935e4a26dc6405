/**
 * Crash consistency, many times over: the service on a SQLite file under
 * issuance load (password grant, refresh rotation, code redemption), killed
 * with SIGKILL at a random moment, restarted on the same file and checked
 * (test/support/crash.ts). Not part of `npm test`, which runs two rounds.
 *
 *   npm run crash -- [--rounds 25] [--max-kill-ms 2000]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { ensureBuilt } from "../test/support/cli.js";
import { crashRound } from "../test/support/crash.js";

const { values } = parseArgs({ options: { rounds: { type: "string", default: "25" }, "max-kill-ms": { type: "string", default: "2000" } } });
const rounds = Number(values.rounds);
const maxKillMs = Number(values["max-kill-ms"]);

ensureBuilt();
const dir = mkdtempSync(join(tmpdir(), "identity-crash-"));
console.log(`${rounds} rounds, each killed with SIGKILL 0-${maxKillMs} ms into the load (files in ${dir})`);
console.log("round  kill ms  access tokens  refreshes  codes  in flight  integrity  violations");
let failed = 0;
const totals = { access: 0, refresh: 0, codes: 0, inFlight: 0 };
for (let round = 0; round < rounds; round++) {
  const report = await crashRound(dir, round, Math.floor(Math.random() * maxKillMs));
  totals.access += report.issuedAccessTokens;
  totals.refresh += report.usedRefreshTokens;
  totals.codes += report.redeemedCodes;
  totals.inFlight += report.inFlightAtKill;
  if (report.violations.length) failed++;
  console.log(
    [round + 1, report.killedAfterMs, report.issuedAccessTokens, report.usedRefreshTokens, report.redeemedCodes, report.inFlightAtKill, report.integrity, report.violations.length]
      .map((v, i) => String(v).padStart([5, 8, 14, 10, 6, 10, 10, 11][i]!))
      .join(" "),
  );
  for (const v of report.violations) console.log(`       ${v}`);
}
rmSync(dir, { recursive: true, force: true });
console.log(`
${rounds} rounds, ${failed} with a violation. Checked after restarts: ${totals.access} access tokens active,
${totals.refresh} used refresh tokens and ${totals.codes} redeemed codes refused, ${totals.inFlight} secrets in flight at a kill used at most once.`);
process.exit(failed ? 1 : 0);
