import assert from "node:assert/strict";
import { listAuditEvents, LoggedAuditTrail } from "../../src/domain/auditTrail.js";
import type { AuditEvent } from "../../src/shared/audit.js";
import type { StoredAuditEvent } from "../../src/store/auditEvents.js";
import { FakeClock } from "../support/clock.js";
import { RecordingLogger } from "../support/server.js";

const TOKEN_EVENT = {
  event: "token_issued",
  outcome: "success",
  actor: { kind: "client", id: "app-1", name: "client-1" },
  clientId: "client-1",
  details: { grantType: "client_credentials", scope: "" },
} as const;

function trail() {
  const rows: AuditEvent[] = [];
  const logger = new RecordingLogger();
  return { rows, logger, trail: new LoggedAuditTrail({ append: (e) => void rows.push(e) }, logger, new FakeClock(1_000)) };
}

describe("the audit trail", () => {
  it("writes an event as a log line of its own and a row, its absent fields null", () => {
    const { rows, logger, trail: audit } = trail();
    audit.record(TOKEN_EVENT);
    assert.deepEqual(rows, [{ ...TOKEN_EVENT, time: 1_000, clientAddress: null, userId: null, userName: null }]);
    assert.deepEqual(logger.lines, [{ level: "info", message: "audit event", fields: { event: "token_issued", outcome: "success", actor: TOKEN_EVENT.actor, clientId: "client-1", details: TOKEN_EVENT.details } }]);
  });

  it("puts the event on a request's line when one carries it: no line of its own, the row as ever", () => {
    const { rows, logger, trail: audit } = trail();
    const line: { auditEvent?: Record<string, unknown> } = {};
    audit.record(TOKEN_EVENT, line);
    assert.equal(line.auditEvent?.event, "token_issued");
    assert.deepEqual(logger.lines, []);
    assert.equal(rows.length, 1);
  });

  it("gives a second event of one request a line of its own: a line carries one event", () => {
    const { logger, trail: audit } = trail();
    const line: { auditEvent?: Record<string, unknown> } = {};
    audit.record(TOKEN_EVENT, line);
    audit.record({ ...TOKEN_EVENT, details: { grantType: "password" } }, line);
    assert.deepEqual(line.auditEvent?.details, TOKEN_EVENT.details);
    assert.equal(logger.lines.length, 1);
  });

  it("pages newest first, and refuses a page token it did not give and a page size out of range", async () => {
    const stored = Array.from({ length: 5 }, (_, i) => ({ id: String(5 - i) }) as StoredAuditEvent);
    const repo = { list: async (filter: { before?: string }, limit: number) => stored.filter((e) => !filter.before || Number(e.id) < Number(filter.before)).slice(0, limit) };
    const first = await listAuditEvents(repo, { pageSize: 2 });
    assert.deepEqual(first.events.map((e) => e.id), ["5", "4"]);
    const second = await listAuditEvents(repo, { pageSize: 3, pageToken: first.nextPageToken });
    assert.deepEqual(second.events.map((e) => e.id), ["3", "2", "1"]);
    assert.equal(second.nextPageToken, "");
    await assert.rejects(listAuditEvents(repo, { pageSize: 2, pageToken: "forged" }), /page token/);
    await assert.rejects(listAuditEvents(repo, { pageSize: 1001 }), /page size/);
  });
});
