import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { measureAdminContext } from "./adminContext.js";
import { auditCostRows } from "./auditCost.js";
import { clientCredentialsRows } from "./clientCredentials.js";
import { dpopRow } from "./dpop.js";
import { measureFastPaths } from "./fastPaths.js";
import { delegationRows } from "./delegation.js";
import { latencyRow } from "./latency.js";
import { startOurs } from "./ours.js";
import { startService } from "./processes.js";
import { passes, ratioOf, writeReport, type Report } from "./report.js";
import { adminContextOnly, auditOnly, delegationOnly, dpopOnly, fastPathsOnly, log, quick, settings, TSX } from "./settings.js";
import { largeStoreRow, memoryRow } from "./storage.js";
import { verificationRows } from "./verification.js";
import { workersRows } from "./workers.js";
import { ensureBuilt } from "../test/support/cli.js";

/**
 * `npm run bench`: our built server against references started in the same
 * run (bare node:http and node:http2 servers, node-oidc-provider, jose's
 * signing), each row's loads in turns. Prints the table and writes
 * bench/results/latest.md and latest.json.
 */
async function main(): Promise<void> {
  ensureBuilt();
  const dir = mkdtempSync(join(tmpdir(), "identity-bench-"));
  const started = Date.now();
  try {
    if (fastPathsOnly) return await measureFastPaths(dir);
    if (adminContextOnly) return await measureAdminContext(dir);
    if (delegationOnly) return await measureDelegation(dir);
    if (dpopOnly) return await measureDPoPOnly(dir);
    if (auditOnly) {
      const report: Report = { mode: quick ? "quick" : "full", rows: await auditCostRows(dir), figures: [], notes: [] };
      process.stdout.write(`\n${writeReport(report, "bench/results/audit")}\n`);
      return;
    }
    log(`${quick ? "quick" : "full"} mode: ${settings.seconds} s per load in ${settings.turns} turns after ${settings.warmupSeconds} s of warm-up; files in ${dir}`);
    const reference = (name: string, file: string) =>
      startService({ name, args: [...TSX, `bench/references/${file}`], env: { NODE_ENV: "production" }, logFile: join(dir, `${file}.log`), ready: /listening on (\S+)/ });
    const [bare, bare2, oidc, ours] = await Promise.all([
      reference("bare node:http", "bareHttp.ts"),
      reference("bare node:http2", "bareHttp2.ts"),
      reference("node-oidc-provider", "oidcProvider.ts"),
      startOurs(dir, "main"),
    ]);
    const report: Report = { mode: quick ? "quick" : "full", rows: [], figures: [], notes: [] };
    const issuance = await clientCredentialsRows(ours.url, oidc.ready[1]!);
    report.rows.push(...issuance.rows);
    report.rows.push(...(await delegationRows(ours)));
    const verification = await verificationRows(ours, { bare: bare.ready[1]!, bare2: bare2.ready[1]!, oidc: oidc.ready[1]! }, dir);
    report.rows.push(...verification.rows);
    report.figures.push(...verification.figures);
    const dpop = await dpopRow(ours);
    report.rows.push(dpop.row);
    report.figures.push(...dpop.figures);
    await Promise.all([oidc.stop(), bare2.stop()]);
    const latency = await latencyRow(ours.url, bare.ready[1]!, verification.tokens[0]!, dir);
    report.rows.push(latency.row);
    report.notes.push(latency.note);
    await bare.stop();
    report.rows.push(await memoryRow(ours, issuance.issued + settings.tokens + settings.userTokens));
    await ours.stop();
    report.rows.push(await largeStoreRow(dir));
    report.rows.push(...(await workersRows(dir)));
    report.rows.push(...(await auditCostRows(dir)));
    if (quick) report.notes.push(`Quick mode: ${settings.issued.toLocaleString("en-US")} issued and ${settings.largeStore.toLocaleString("en-US")} stored tokens, not 1,000,000.`);
    report.notes.push(
      `Loads in turns of ${settings.seconds / settings.turns} s; ${Math.round((Date.now() - started) / 1000)} s in all. The load generators share the machine's cores with the servers: compare ratios, not figures.`,
    );
    process.stdout.write(`\n${writeReport(report)}\n\nWritten to bench/results/latest.md and latest.json\n`);
    const misses = report.rows.filter((row) => !passes(row));
    if (misses.length) log(`${misses.length} rows miss: ${misses.map((r) => `${r.scenario} (${ratioOf(r).toFixed(2)}x)`).join("; ")}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `--delegation`: issue 44's rows alone, against one server of ours. */
async function measureDelegation(dir: string): Promise<void> {
  const ours = await startOurs(dir, "delegation");
  try {
    const report: Report = { mode: quick ? "quick" : "full", rows: await delegationRows(ours), figures: [], notes: [] };
    process.stdout.write(`\n${writeReport(report, "bench/results/delegation")}\n`);
  } finally {
    await ours.stop();
  }
}

/** --dpop: the DPoP row alone, on a server of its own; written to bench/results/dpop. */
async function measureDPoPOnly(dir: string): Promise<void> {
  const ours = await startOurs(dir, "dpop");
  try {
    const { row, figures } = await dpopRow(ours);
    const report: Report = { mode: quick ? "quick" : "full", rows: [row], figures, notes: [] };
    process.stdout.write(`\n${writeReport(report, "bench/results/dpop")}\n`);
  } finally {
    await ours.stop();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`[bench] failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
