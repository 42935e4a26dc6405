import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { join } from "node:path";
import { combined, httpLoad, measured, type LoadResult } from "./load.js";
import { startOurs, tokenRequest } from "./ours.js";
import { failed, type Row } from "./report.js";

/** Each kind with its target: events may cost RS256 tokens 5% (issue 29 §4), opaque ones, the cheapest, 10% (issue 48 §1). */
const KINDS = [["RS256", "client_credentials, RS256 JWT", 0.95], ["opaque", "client_credentials, opaque", 0.9]] as const;
const PAIRS = 3;

/**
 * What the audit trail costs a token request (at most 5%, 10% for opaque tokens: KINDS): the
 * same build with its events on (the default) and off
 * (`--audit-events false`), both up at once on SQLite files of their own,
 * loaded in turns, on PAIRS fresh pairs of servers per token kind, added
 * up. Two processes of one build differ by up to ~10% for their whole life,
 * so one pair cannot resolve 5%; pairs that had served RS256 tokens first
 * read opaque ones at 0.79-1.05x, pairs of their own at 0.84-0.92x. Their
 * logs and databases are in RAM (/dev/shm) where it exists: on a disk,
 * writeback stalls hit both servers at random and drew the ratio toward 1.
 */
export async function auditCostRows(benchDir: string): Promise<Row[]> {
  execFileSync("sync");
  const rows: Row[] = [];
  for (const [kind, label, target] of KINDS) {
    const runs = { on: [] as LoadResult[], off: [] as LoadResult[] };
    for (let pair = 1; pair <= PAIRS; pair++) {
      const dir = mkdtempSync(join(existsSync("/dev/shm") ? "/dev/shm" : benchDir, "audit-cost-"));
      const servers = [await startOurs(dir, "audit-on"), await startOurs(dir, "audit-off", 1, { IDENTITY_AUDIT_EVENTS: "false" })];
      try {
        const names = [`${label}, audit on (pair ${pair})`, `${label}, audit off (pair ${pair})`];
        const [on, off] = await measured(names, servers.map((server) => httpLoad(server.url, [tokenRequest(kind)])));
        runs.on.push(on!);
        runs.off.push(off!);
      } finally {
        await Promise.all(servers.map((server) => server.stop()));
        rmSync(dir, { recursive: true, force: true });
      }
    }
    const [on, off] = [combined(runs.on), combined(runs.off)];
    rows.push({ scenario: `${label}, audit events on`, ours: on.rps, unit: "req/s", referenceLabel: "--audit-events false", reference: off.rps, target, problem: failed(on, off) });
  }
  return rows;
}
