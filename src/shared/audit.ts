import { AsyncLocalStorage } from "node:async_hooks";

/**
 * The security events of the audit trail (docs/audit.md). The names are
 * stable: operators filter and alert on them. What was attempted is the
 * name; how it went is the outcome.
 */
export const AUDIT_EVENTS = [
  "sign_in",
  "lockout",
  "token_issued",
  "token_revoked",
  "refresh_reuse",
  "federated_sign_in",
  "application_created",
  "application_updated",
  "application_deleted",
  "user_created",
  "user_updated",
  "user_deleted",
  "password_set",
  "provider_created",
  "provider_updated",
  "provider_deleted",
  "resource_created",
  "resource_updated",
  "resource_deleted",
  "client_registered",
  "key_rotated",
  "sessions_revoked",
  "consent_revoked",
  "factor_enrolled",
  "factor_removed",
  "factor_used",
  "recovery_code_used",
  "passkey_added",
  "passkey_removed",
  "step_up_requested",
  "signup",
  "email_verified",
  "password_reset",
  "password_changed",
  "mail_failed",
  "backchannel_logout_delivered",
  "backchannel_logout_failed",
] as const;
export type AuditEventName = (typeof AUDIT_EVENTS)[number];

export type AuditOutcome = "success" | "failure";

/** Who acted: a user by name, a client by client_id, an admin by name; each with its id. */
export interface AuditActor {
  kind: "user" | "client" | "admin";
  /** The user's or application's id; "" when none is known (a user name that does not exist). */
  id: string;
  /** The user name, the client_id, or the admin's name. */
  name: string;
}

/**
 * One security event, as stored and as logged. Never a secret: no token,
 * code, password, client secret or session id, in any field.
 */
export interface AuditEvent {
  event: AuditEventName;
  /** Epoch ms. */
  time: number;
  outcome: AuditOutcome;
  actor: AuditActor;
  /** Where the request came from, when a request caused it. */
  clientAddress: string | null;
  /** The application concerned (what `--client` filters on). */
  clientId: string | null;
  /** The user concerned (what `--user` filters on, with a user actor's name). */
  userId: string | null;
  userName: string | null;
  /** What else explains it: a failure's reason, a grant type, an admin change's before/after. */
  details: Record<string, unknown> | null;
}

/** What a caller records; the trail adds the time, and absent fields are null. */
export type AuditRecord = Pick<AuditEvent, "event" | "outcome" | "actor"> & Partial<Omit<AuditEvent, "event" | "outcome" | "actor" | "time">>;

/**
 * A log line still being written (a request's own line) that can carry one
 * event's fields instead of the event taking a line of its own.
 */
export interface EventCarrier {
  auditEvent?: Record<string, unknown>;
}

/** Where domain code records security events (src/domain/auditTrail.ts writes them to the log and the store). */
export interface AuditTrail {
  /** `line`, when given, carries the event's log fields (if it carries none yet). */
  record(event: AuditRecord, line?: EventCarrier): void;
}

export const noAudit: AuditTrail = { record: () => {} };

/** An application acting: named by its client_id. */
export const clientActor = (app: { id: string; clientId: string }): AuditActor => ({ kind: "client", id: app.id, name: app.clientId });

/** A user acting: named by its user name. */
export const userActor = (user: { id: string; name: string }): AuditActor => ({ kind: "user", id: user.id, name: user.name });

/** Who makes an admin change, and from where. */
export interface AdminCaller {
  actor: AuditActor;
  clientAddress?: string;
}

/**
 * The admin caller of the change under way. The admin doors run each call
 * inside `run`, so the domain code that makes the change (shared with the
 * CLI and the config file, which run outside it) names who made it without
 * every signature carrying the caller.
 */
const adminCalls = new AsyncLocalStorage<AdminCaller>();

/**
 * Admin calls under way. An AsyncLocalStorage, once run, keeps Node 20's
 * promise hooks on for the whole process, which slows every request after
 * the first admin call (docs/architecture.md, "Fast paths"); so it is
 * disabled again whenever no admin call is under way, and the next `run`
 * turns it back on.
 */
let callsUnderWay = 0;

function finished(): void {
  if (--callsUnderWay === 0) adminCalls.disable();
}

export const adminCaller = {
  run<T>(caller: AdminCaller, fn: () => T): T {
    callsUnderWay++;
    let result: T;
    try {
      result = adminCalls.run(caller, fn);
    } catch (err) {
      finished();
      throw err;
    }
    if (result instanceof Promise) return result.finally(finished) as T;
    finished();
    return result;
  },
  /** The caller of the admin call under way; outside one, the local operator (CLI, config file). */
  current(): AdminCaller {
    return adminCalls.getStore() ?? LOCAL_OPERATOR;
  },
};

const LOCAL_OPERATOR: AdminCaller = { actor: { kind: "admin", id: "local", name: "local" } };

/** An admin change: each field that changed, and the names of the secrets that changed (never their values). */
export interface ChangeDiff {
  changes: Record<string, { before?: unknown; after?: unknown }>;
  secretsChanged: string[];
}

/**
 * The fields of `after` that differ from `before`, as `{ field: { before, after } }`,
 * leaving out `secretFields`, which are only named when they changed.
 * A create has no `before`, a delete no `after`.
 */
export function changeDiff(before: object | undefined, after: object | undefined, secretFields: readonly string[]): ChangeDiff {
  const changes: ChangeDiff["changes"] = {};
  const secretsChanged: string[] = [];
  const beforeFields = before as Record<string, unknown> | undefined;
  const afterFields = after as Record<string, unknown> | undefined;
  const names = new Set([...Object.keys(before ?? {}), ...Object.keys(after ?? {})]);
  for (const name of names) {
    if (name === "updatedAt" || name === "createdAt") continue;
    const was = beforeFields?.[name];
    const is = afterFields?.[name];
    if (JSON.stringify(was) === JSON.stringify(is)) continue;
    if (secretFields.includes(name)) secretsChanged.push(name);
    else changes[name] = { ...(before ? { before: was ?? null } : {}), ...(after ? { after: is ?? null } : {}) };
  }
  return { changes, secretsChanged };
}

/** What an admin change was made to: its name, and the application or user it is, for the filters. */
export interface ChangeTarget {
  name: string;
  clientId?: string;
  userId?: string;
  userName?: string;
}

/**
 * Record an admin change made by the caller of the admin call under way, as
 * `{ target, changes, secretsChanged }` (changeDiff). An update that changed
 * nothing (a config file applied again) is no event.
 */
export function recordAdminChange(
  audit: AuditTrail,
  event: AuditEventName,
  target: ChangeTarget,
  before: object | undefined,
  after: object | undefined,
  secretFields: readonly string[],
): void {
  const diff = changeDiff(before, after, secretFields);
  if (before && after && Object.keys(diff.changes).length === 0 && diff.secretsChanged.length === 0) return;
  recordAdminAction(audit, event, target, { ...diff });
}

/** Record what the caller of the admin call under way did to `target`, as `{ target, ...details }`. */
export function recordAdminAction(audit: AuditTrail, event: AuditEventName, target: ChangeTarget, details: Record<string, unknown>): void {
  const caller = adminCaller.current();
  const { name, ...subject } = target;
  audit.record({ event, outcome: "success", actor: caller.actor, clientAddress: caller.clientAddress, ...subject, details: { target: name, ...details } });
}
