import { createRequire } from "node:module";
import knex, { type Knex } from "knex";
import { DatabaseDeadlineError } from "./errors.js";
import { span, tracing, type SpanAttributes } from "../shared/tracing.js";

/**
 * The deadline of every database call (both backends): waiting for a
 * connection plus the statement itself. Past it the caller gets a
 * DatabaseDeadlineError (503), and a PostgreSQL connection still waiting is
 * dropped. SQLite waits for another process's lock this long at most.
 */
export const DEFAULT_QUERY_TIMEOUT_MS = 5000;

/** The query deadline in force on a client: 0 while migrating. */
interface Deadline {
  ms: number;
}

const deadlineOf = (db: Knex): Deadline | undefined => (db.client as { queryDeadline?: Deadline }).queryDeadline;

/** The query deadline of a database opened here (DEFAULT_QUERY_TIMEOUT_MS for another Knex). */
export function queryDeadlineMs(db: Knex): number {
  return deadlineOf(db)?.ms || DEFAULT_QUERY_TIMEOUT_MS;
}

/** Run `fn` with no deadline on `db` (migrations: a long index build is not a request). */
export async function withoutDeadline<T>(db: Knex, fn: () => Promise<T>): Promise<T> {
  const deadline = deadlineOf(db);
  if (!deadline) return fn();
  const ms = deadline.ms;
  deadline.ms = 0;
  try {
    return await fn();
  } finally {
    deadline.ms = ms;
  }
}

/** When the call holding a connection started waiting for it (set on acquisition, taken by its first statement). */
const CALL_STARTED = Symbol("identity.callStarted");
/** A SQLite statement past its deadline but still running: settles when it ends. */
const ABANDONED = Symbol("identity.abandoned");

type RawConnection = {
  [CALL_STARTED]?: number;
  [ABANDONED]?: Promise<void>;
  __knex__disposed?: unknown;
  connection?: { stream?: { destroy(): void } };
};

const isRollback = (obj: unknown) => /^\s*ROLLBACK\b/i.test(String((obj as { sql?: unknown }).sql ?? ""));

/**
 * A SQLite transaction as Knex begins it (`BEGIN;`, deferred) takes the
 * write lock at its first write. One that read first is then refused at
 * once (SQLITE_BUSY, no busy wait) when another process (a worker, an
 * instance on the same file) wrote since its read: an admin's delete failed
 * with 503 that way. `BEGIN IMMEDIATE` takes the lock at the start, waiting
 * for it as any write does (busy_timeout, within the deadline). In one
 * process the one connection runs one transaction at a time anyway.
 */
const beginImmediately = (obj: unknown): unknown =>
  /^\s*BEGIN;?\s*$/i.test(String((obj as { sql?: unknown }).sql ?? "")) ? { ...(obj as object), sql: "BEGIN IMMEDIATE;" } : obj;

/** What of Knex's dialect client the deadline overrides (`_query` is not in Knex's types). */
interface DialectClient {
  acquireConnection(): Promise<RawConnection>;
  _query(connection: RawConnection, obj: unknown): Promise<unknown>;
}

const requireDialect = createRequire(import.meta.url);
const DIALECTS = { pg: "knex/lib/dialects/postgres/index.js", sqlite3: "knex/lib/dialects/sqlite3/index.js" } as const;

/**
 * Knex's dialect client with a deadline on every call: the wait for a
 * connection (acquireConnectionTimeout, at most the deadline) and the first
 * statement after it share one budget; each later statement of a
 * transaction has one of its own. Every Knex query and transaction of every
 * repository passes here (a transaction's client inherits the class).
 *
 * Past the deadline the statement's promise rejects with a
 * DatabaseDeadlineError. A PostgreSQL connection is then dropped (socket
 * destroyed, marked for the pool to discard): on a silent network its answer
 * may never come, and a cancel request would hang the same way; pg's own
 * `query_timeout` would leave it in the pool, still owing the old answer. A
 * SQLite statement cannot be dropped (the one connection holds the
 * database): busy_timeout ends its wait for a lock by the deadline, a
 * statement whose budget is spent is never started, and until one past its
 * deadline ends, the connection refuses other statements (ROLLBACK waits
 * for it). Two statements at once on one node-sqlite3 connection would
 * queue for its mutex, and the main thread, finalizing a statement, would
 * wait on that mutex too: the event loop stood still for seconds.
 */
export function withDeadlines(driver: keyof typeof DIALECTS, queryTimeoutMs: number): typeof knex.Client {
  const Base = requireDialect(DIALECTS[driver]) as new (config: Knex.Config) => DialectClient;
  const deadline: Deadline = { ms: queryTimeoutMs };
  class WithDeadlines extends Base {
    get queryDeadline(): Deadline {
      return deadline;
    }

    override async acquireConnection(): Promise<RawConnection> {
      const started = performance.now();
      const connection = await super.acquireConnection();
      connection[CALL_STARTED] = started;
      return connection;
    }

    override _query(connection: RawConnection, given: unknown): Promise<unknown> {
      const obj = driver === "sqlite3" ? beginImmediately(given) : given;
      if (!tracing()) return this.queryWithDeadline(connection, obj);
      const attributes = statementAttributes(driver, obj);
      return span(`db ${attributes["db.operation.name"]}`, "client", attributes, () => this.queryWithDeadline(connection, obj));
    }

    private queryWithDeadline(connection: RawConnection, obj: unknown): Promise<unknown> {
      const ms = deadline.ms;
      const started = connection[CALL_STARTED] ?? performance.now();
      delete connection[CALL_STARTED];
      const abandoned = connection[ABANDONED];
      if (abandoned) {
        // A failed transaction's ROLLBACK must run, after the statement it ends.
        if (isRollback(obj)) return abandoned.then(() => super._query(connection, obj));
        return Promise.reject(new DatabaseDeadlineError(deadline.ms));
      }
      if (ms === 0) return super._query(connection, obj);
      const left = started + ms - performance.now();
      if (left <= 0) return Promise.reject(new DatabaseDeadlineError(ms));
      const running = super._query(connection, obj);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          const err = new DatabaseDeadlineError(ms);
          if (driver === "pg") {
            connection.__knex__disposed = err;
            connection.connection?.stream?.destroy();
          } else {
            const ended = running.then(
              () => {},
              () => {},
            );
            connection[ABANDONED] = ended;
            void ended.then(() => {
              if (connection[ABANDONED] === ended) delete connection[ABANDONED];
            });
          }
          reject(err);
        }, left);
        running.then(
          (result) => {
            clearTimeout(timer);
            resolve(result);
          },
          (err: unknown) => {
            clearTimeout(timer);
            reject(err);
          },
        );
      });
    }
  }
  return WithDeadlines as unknown as typeof knex.Client;
}

/**
 * What a database span says of its statement: the backend, the operation and
 * the statement's text with its placeholders (Knex binds every value, so no
 * value a caller sent is in it), cut at 1000 characters.
 */
function statementAttributes(driver: keyof typeof DIALECTS, obj: unknown): SpanAttributes {
  const sql = String((obj as { sql?: unknown }).sql ?? "");
  const operation = /^\s*(\w+)/.exec(sql)?.[1]?.toUpperCase() ?? "QUERY";
  return {
    "db.system.name": driver === "pg" ? "postgresql" : "sqlite",
    "db.operation.name": operation,
    "db.query.text": sql.slice(0, 1000),
  };
}
