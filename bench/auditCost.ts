import { httpLoad, measured } from "./load.js";
import { startOurs, tokenRequest, type Kind } from "./ours.js";
import { failed, type Row } from "./report.js";

/**
 * What the audit trail costs a token request (issue 29 §4: at most 5%): the
 * same build with its events on (the default) and off
 * (`--audit-events false`), both up at once on SQLite files of their own,
 * RS256 and opaque client_credentials in turns.
 */
export async function auditCostRows(dir: string): Promise<Row[]> {
  const servers = [await startOurs(dir, "audit-on"), await startOurs(dir, "audit-off", 1, { IDENTITY_AUDIT_EVENTS: "false" })];
  try {
    const row = async (kind: Kind, label: string): Promise<Row> => {
      const [on, off] = await measured([`${label}, audit on`, `${label}, audit off`], servers.map((server) => httpLoad(server.url, [tokenRequest(kind)])));
      return { scenario: `${label}, audit events on`, ours: on!.rps, unit: "req/s", referenceLabel: "--audit-events false", reference: off!.rps, target: 0.95, problem: failed(on!, off!) };
    };
    return [await row("RS256", "client_credentials, RS256 JWT"), await row("opaque", "client_credentials, opaque")];
  } finally {
    await Promise.all(servers.map((server) => server.stop()));
  }
}
