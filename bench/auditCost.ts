import { execFileSync } from "node:child_process";
import { combined, httpLoad, measured, type LoadResult } from "./load.js";
import { startOurs, tokenRequest } from "./ours.js";
import { failed, type Row } from "./report.js";

const KINDS = [["RS256", "client_credentials, RS256 JWT"], ["opaque", "client_credentials, opaque"]] as const;
const PAIRS = 3;

/**
 * What the audit trail costs a token request (issue 29 §4: at most 5%): the
 * same build with its events on (the default) and off
 * (`--audit-events false`), both up at once on SQLite files of their own,
 * RS256 and opaque client_credentials in turns, on PAIRS fresh pairs of
 * servers added up: two processes of one build differ by up to ~10% for
 * their whole life (with events on in both, one pair read 0.995-1.10x), so
 * one pair cannot resolve 5%. The row starts on a clean disk: the pages the
 * rows before it left dirty (the 1,000,000-token store) are otherwise
 * written back during it, and the kernel then stalls most the server that
 * writes most (0.85x with 2.3 GB dirty, against ~0.95x).
 */
export async function auditCostRows(dir: string): Promise<Row[]> {
  execFileSync("sync");
  const runs = KINDS.map(() => ({ on: [] as LoadResult[], off: [] as LoadResult[] }));
  for (let pair = 1; pair <= PAIRS; pair++) {
    const servers = [await startOurs(dir, `audit-on-${pair}`), await startOurs(dir, `audit-off-${pair}`, 1, { IDENTITY_AUDIT_EVENTS: "false" })];
    try {
      for (const [i, [kind, label]] of KINDS.entries()) {
        const names = [`${label}, audit on (pair ${pair})`, `${label}, audit off (pair ${pair})`];
        const [on, off] = await measured(names, servers.map((server) => httpLoad(server.url, [tokenRequest(kind)])));
        runs[i]!.on.push(on!);
        runs[i]!.off.push(off!);
      }
    } finally {
      await Promise.all(servers.map((server) => server.stop()));
    }
  }
  return KINDS.map(([, label], i) => {
    const on = combined(runs[i]!.on);
    const off = combined(runs[i]!.off);
    return { scenario: `${label}, audit events on`, ours: on.rps, unit: "req/s", referenceLabel: "--audit-events false", reference: off.rps, target: 0.95, problem: failed(on, off) };
  });
}
