/**
 * The full fuzz run: every endpoint of test/support/fuzz against a fresh
 * server, 10,000 cases each by default. Not part of `npm test`.
 *
 *   npm run fuzz -- [--runs 10000] [--seed N] [--only REGEX] [--parallel 4] [--shrink]
 *
 * DATABASE_URL=postgres://... fuzzes on a scratch PostgreSQL schema instead
 * of SQLite in memory. Exits 1 on any finding, printing the case (and its
 * seed and path, so `--seed N --only NAME` replays it).
 */
import { parseArgs } from "node:util";
import { freshPostgresSchema, POSTGRES_URL } from "../test/support/databases.js";
import { fuzzServer, WarningLog, startFuzzServer } from "../test/support/fuzz/run.js";

const { values } = parseArgs({
  options: {
    runs: { type: "string", default: "10000" },
    seed: { type: "string" },
    only: { type: "string" },
    parallel: { type: "string", default: "4" },
    shrink: { type: "boolean", default: false },
  },
});
const runs = Number(values.runs);
const seed = values.seed === undefined ? Date.now() % 2 ** 31 : Number(values.seed);

const rejections: unknown[] = [];
process.on("unhandledRejection", (reason) => rejections.push(reason));

const schema = POSTGRES_URL ? freshPostgresSchema() : undefined;
const logger = new WarningLog();
const server = await startFuzzServer(logger, schema?.url);
console.log(`fuzzing ${server.url} on ${schema ? `PostgreSQL schema ${schema.schema}` : "SQLite in memory"}: ${runs} cases per endpoint, seed ${seed}`);

const started = Date.now();
let cases = 0;
const results = await fuzzServer(server, {
  numRuns: runs,
  seed,
  only: values.only ? new RegExp(values.only) : undefined,
  parallel: Number(values.parallel),
  shrink: values.shrink,
  onResult: (r) => {
    cases += r.runs;
    const rate = Math.round((r.runs * 1000) / Math.max(r.ms, 1));
    console.log(`${r.failed ? "FAIL" : "ok  "} ${r.name.padEnd(62)} ${String(r.runs).padStart(6)} cases ${String(rate).padStart(5)}/s`);
    if (r.failed) console.log(`     ${r.report}`);
  },
});

const jwks = await fetch(`${server.url}/.well-known/jwks`).then((r) => r.status, () => 0);
await server.close();
await schema?.drop();

const failed = results.filter((r) => r.failed);
const errors = logger.unexpected();
const seconds = Math.round((Date.now() - started) / 1000);
console.log(`
${results.length} endpoints, ${cases} cases in ${seconds} s (seed ${seed})
  endpoints with a finding: ${failed.length}
  unexpected errors logged: ${errors.length}
  unhandled rejections:     ${rejections.length}
  JWKS afterwards:          ${jwks}`);
for (const e of errors.slice(0, 10)) console.log(`  log: ${JSON.stringify(e).slice(0, 500)}`);
for (const r of rejections.slice(0, 10)) console.log(`  rejection: ${String(r)}`);
process.exit(failed.length || errors.length || rejections.length || jwks !== 200 ? 1 : 0);
