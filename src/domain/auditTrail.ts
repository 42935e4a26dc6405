import type { AuditEvent, AuditRecord, AuditTrail, EventCarrier } from "./../shared/audit.js";
import type { Clock } from "./../shared/clock.js";
import type { Logger } from "./../shared/log.js";
import type { ClientLockout } from "./../oauth/clientThrottle.js";
import { OAuthError } from "./../oauth/errors.js";
import type { Lockout } from "./../oauth/loginThrottle.js";
import type { AuditEventFilter, AuditEventRepository, AuditEventWriter, StoredAuditEvent } from "./../store/auditEvents.js";

/**
 * The audit trail (docs/audit.md): each event is one JSON log line, written
 * at once, and a row queued for the database, written in batches off the
 * request's path (AuditEventWriter).
 */
export class LoggedAuditTrail implements AuditTrail {
  constructor(
    private readonly writer: Pick<AuditEventWriter, "append">,
    private readonly logger: Logger,
    private readonly clock: Clock,
  ) {}

  record(r: AuditRecord, line?: EventCarrier): void {
    const event: AuditEvent = {
      event: r.event,
      time: this.clock.now(),
      outcome: r.outcome,
      actor: r.actor,
      clientAddress: r.clientAddress ?? null,
      clientId: r.clientId ?? null,
      userId: r.userId ?? null,
      userName: r.userName ?? null,
      details: r.details ?? null,
    };
    // A request's own line carries its event: one line written, not two (docs/audit.md).
    if (line && line.auditEvent === undefined) line.auditEvent = auditLine(event);
    // The line's `time` is pino's, the moment it is written: the event's own.
    else this.logger.infoPlain("audit event", auditLine(event));
    this.writer.append(event);
  }
}

/** An event as log-line fields (and as the CLI prints it): its time as ISO 8601, nulls left out. */
export function auditLine(e: AuditEvent): Record<string, unknown> {
  const line: Record<string, unknown> = { event: e.event, outcome: e.outcome, actor: e.actor };
  if (e.clientAddress !== null) line.clientAddress = e.clientAddress;
  if (e.clientId !== null) line.clientId = e.clientId;
  if (e.userId !== null) line.userId = e.userId;
  if (e.userName !== null) line.userName = e.userName;
  if (e.details !== null) line.details = e.details;
  return line;
}

export interface AuditQuery {
  userName?: string;
  clientId?: string;
  event?: string;
  /** Epoch ms. */
  since?: number;
  /** Events per page, 1 to MAX_AUDIT_PAGE. */
  pageSize: number;
  /** From the previous page's answer; empty for the newest events. */
  pageToken?: string;
}

export const MAX_AUDIT_PAGE = 1000;

export interface AuditPage {
  events: StoredAuditEvent[];
  /** Empty when this page holds the oldest matching event. */
  nextPageToken: string;
}

/** Stored events, newest first, a page at a time. The page token names the last event shown, by id. */
export async function listAuditEvents(repo: Pick<AuditEventRepository, "list">, query: AuditQuery): Promise<AuditPage> {
  if (!Number.isInteger(query.pageSize) || query.pageSize < 1 || query.pageSize > MAX_AUDIT_PAGE) {
    throw new OAuthError("invalid_request", `page size must be 1 to ${MAX_AUDIT_PAGE}`);
  }
  const filter: AuditEventFilter = {
    userName: query.userName || undefined,
    clientId: query.clientId || undefined,
    event: query.event || undefined,
    since: query.since,
    before: query.pageToken ? parsePageToken(query.pageToken) : undefined,
  };
  // One more than asked tells whether another page follows.
  const rows = await repo.list(filter, query.pageSize + 1);
  const events = rows.slice(0, query.pageSize);
  const last = events[events.length - 1];
  return { events, nextPageToken: rows.length > query.pageSize && last ? pageToken(last) : "" };
}

const pageToken = (e: StoredAuditEvent) => Buffer.from(`before:${e.id}`).toString("base64url");

function parsePageToken(token: string): string {
  const match = /^before:(\d{1,15})$/.exec(Buffer.from(token, "base64url").toString());
  if (!match) throw new OAuthError("invalid_request", "page token is not one this service gave");
  return match[1]!;
}

/**
 * A lockout as an event: a user name or client_id locked (by name, with no
 * id: whether it exists is not told), or a client address.
 */
export function lockoutEvent(lockout: Lockout | ClientLockout): AuditRecord {
  const until = new Date(lockout.until).toISOString();
  if (lockout.kind === "address") {
    return { event: "lockout", outcome: "failure", actor: { kind: "user", id: "", name: "" }, clientAddress: lockout.subject, details: { locked: "address", until } };
  }
  const byUser = lockout.kind === "user";
  return {
    event: "lockout",
    outcome: "failure",
    actor: { kind: byUser ? "user" : "client", id: "", name: lockout.subject },
    ...(byUser ? { userName: lockout.subject } : { clientId: lockout.subject }),
    details: { locked: lockout.kind, until },
  };
}
