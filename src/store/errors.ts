/** A unique key already holds a row. The domain turns it into its own error. */
export class ConflictError extends Error {
  constructor(readonly entity: string, readonly field: string) {
    super(`${entity} with this ${field} already exists`);
    this.name = "ConflictError";
  }
}

/** Recognise a unique-constraint violation from SQLite or PostgreSQL. */
export function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: string; message?: string };
  return e?.code === "23505" || (e?.code === "SQLITE_CONSTRAINT" && /UNIQUE/i.test(e.message ?? ""));
}

/** Run an insert or update, turning a unique violation into a ConflictError. */
export async function guardUnique<T>(entity: string, field: string, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (err) {
    if (isUniqueViolation(err)) throw new ConflictError(entity, field);
    throw err;
  }
}

// Connection-level failures: the database is down, unreachable, restarting,
// out of connections, or too slow (a statement or pool timeout). Retrying
// later can succeed, unlike a constraint or syntax error.
const UNAVAILABLE_CODES = new Set([
  "ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "ENOTFOUND", "EAI_AGAIN", "EPIPE",
  "57014", // query_canceled (statement_timeout)
  "57P01", "57P02", "57P03", // admin_shutdown, crash_shutdown, cannot_connect_now
  "53300", // too_many_connections
  "SQLITE_BUSY",
]);

/**
 * A database call (waiting for a connection, then its statements) that ran
 * past the query deadline (deadlines.ts): the caller is answered at once, whatever
 * the database does, and a connection that may still be waiting is dropped.
 */
export class DatabaseDeadlineError extends Error {
  readonly code = "IDENTITY_DB_DEADLINE";
  constructor(deadlineMs: number) {
    super(`the database did not answer within ${deadlineMs} ms`);
    this.name = "DatabaseDeadlineError";
  }
}

/** Whether a storage error means "the database cannot serve now" rather than a bug or bad data. */
export function isStoreUnavailable(err: unknown): boolean {
  const e = err as { name?: string; code?: string; message?: string };
  if (!e || typeof e !== "object") return false;
  if (e instanceof DatabaseDeadlineError || e.name === "KnexTimeoutError") return true;
  if (typeof e.code === "string" && (UNAVAILABLE_CODES.has(e.code) || e.code.startsWith("08"))) return true;
  // pg: a connection dropped under a query (a deadline drops it on purpose) or used after, and
  // a new connection unanswered within connectionTimeoutMillis ("timeout expired").
  return /Connection terminated|timeout exceeded when trying to connect|is not queryable$|^timeout expired$/.test(e.message ?? "");
}

// Text PostgreSQL refuses to hold: a NUL character (invalid byte sequence,
// 22021) or one the database encoding lacks (22P05). The value came from the
// caller; SQLite stores it, and then simply finds nothing that matches.
const UNSTORABLE_TEXT_CODES = new Set(["22021", "22P05"]);

/** Whether a storage error means "this value cannot be stored or compared" (bad input, not a bug). */
export function isUnstorableText(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" && UNSTORABLE_TEXT_CODES.has(code);
}
