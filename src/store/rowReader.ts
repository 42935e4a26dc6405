import type { Knex } from "knex";
import sqlite3 from "sqlite3";
import { openSqliteConnection, sqliteFile, type Db } from "./db.js";
import { queryDeadlineMs } from "./deadlines.js";
import { DatabaseDeadlineError } from "./errors.js";
import { SqliteChangeWatch } from "./sqliteChanges.js";
import { span, tracing } from "../shared/tracing.js";

/**
 * A read of at most one row, found by one value: the reads on every
 * request's hot path (a token by its hash, a client by its id, a user by id).
 * Lookups that arrive in the same turn of the event loop are answered by one
 * query for all their values, so `key` must be unique in the results.
 */
export interface RowQuery {
  /** Names the query's prepared statements: one name, one query. */
  readonly name: string;
  /** The result column holding the looked-up value. */
  readonly key: string;
  /** The rows whose `key` is one of the values. */
  build(db: Db, values: readonly string[]): Knex.QueryBuilder;
}

/** The row of `table` whose unique `column` holds the value. */
export function rowBy(table: string, column: string): RowQuery {
  return { name: `${table}.${column}`, key: column, build: (db, values) => db(table).whereIn(column, values) };
}

export interface RowReader {
  /** Which path serves the lookups: `knex` is the plain one (IDENTITY_PLAIN_PATHS). */
  readonly path: "knex" | "knex, batched" | "sqlite statements";
  first<Row>(query: RowQuery, value: string): Promise<Row | undefined>;
  close(): Promise<void>;
}

/**
 * The fast path. On a SQLite file, the hot reads run as prepared statements
 * on read-only connections of their own; everywhere else (PostgreSQL,
 * `:memory:`) they go through Knex like every other query. Either way,
 * lookups are batched.
 */
export function createRowReader(db: Db): RowReader {
  const file = sqliteFile(db);
  return file === undefined ? new BatchingRowReader(new KnexRows(db), "knex, batched") : new BatchingRowReader(new SqliteRows(db, file), "sqlite statements");
}

/** The plain path: each lookup is one Knex query, as every other read is. */
export function knexRowReader(db: Db): RowReader {
  return {
    path: "knex",
    first: async <Row>(query: RowQuery, value: string) => (await query.build(db, [value]).first()) as Row | undefined,
    close: async () => {},
  };
}

/** Runs one query for many values. */
interface RowSource {
  /** At most MAX_BATCH distinct values. */
  rows(query: RowQuery, values: readonly string[]): Promise<Record<string, unknown>[]>;
  /**
   * A number that differs from every earlier one if the data may have changed
   * since, so rows read between two equal ones still hold; undefined (or no
   * such method) promises nothing, and every lookup is a query.
   */
  version?(): number | undefined;
  close(): Promise<void>;
}

/** Most values one query carries. */
const MAX_BATCH = 32;

interface Waiter {
  resolve(row: unknown): void;
  reject(err: unknown): void;
}

/**
 * Why batch: every query is a hop to another thread (the libuv pool for
 * SQLite, a socket for PostgreSQL), and the hop (queue the work, wake the
 * thread, take the result back) cost more CPU than a one-row read: once
 * lookups shared queries, an introspection took ~165 µs of main-thread CPU
 * instead of ~285, and ~20 µs of pool-thread CPU instead of ~50. Under load
 * many requests reach their lookup in the same turn. Each query still
 * starts after every request it answers arrived, so it sees every
 * revocation committed before them.
 */
class BatchingRowReader implements RowReader {
  private waiting = new Map<RowQuery, Map<string, Waiter[]>>();
  private scheduled = false;
  private readonly kept = new KeptRows();

  constructor(
    private readonly source: RowSource,
    readonly path: RowReader["path"],
  ) {}

  first<Row>(query: RowQuery, value: string): Promise<Row | undefined> {
    return new Promise((resolve, reject) => {
      let byValue = this.waiting.get(query);
      if (!byValue) this.waiting.set(query, (byValue = new Map()));
      const waiter: Waiter = { resolve: resolve as (row: unknown) => void, reject };
      const same = byValue.get(value);
      if (same) same.push(waiter);
      else byValue.set(value, [waiter]);
      if (!this.scheduled) {
        this.scheduled = true;
        // After the poll phase: every request read in this turn has reached its lookup.
        setImmediate(() => this.flush());
      }
    });
  }

  close(): Promise<void> {
    this.kept.clear();
    return this.source.close();
  }

  private flush(): void {
    const waiting = this.waiting;
    this.waiting = new Map();
    this.scheduled = false;
    // Looked at after every lookup of this turn arrived, as a query would start.
    const version = this.source.version?.();
    for (const [query, byValue] of waiting) {
      const values: string[] = [];
      for (const [value, waiters] of byValue) {
        const row = version === undefined ? undefined : this.kept.row(query, value, version);
        if (row === undefined) values.push(value);
        else for (const w of waiters) w.resolve(row);
      }
      for (let i = 0; i < values.length; i += MAX_BATCH) this.answer(query, values.slice(i, i + MAX_BATCH), byValue, version);
    }
  }

  private answer(query: RowQuery, values: string[], waiters: Map<string, Waiter[]>, version: number | undefined): void {
    this.source.rows(query, values).then(
      (rows) => {
        const found = new Map(rows.map((row) => [String(row[query.key]), row]));
        for (const value of values) {
          const row = found.get(value);
          if (row !== undefined && version !== undefined) this.kept.keep(query, value, row, version);
          for (const w of waiters.get(value)!) w.resolve(row);
        }
      },
      (err) => {
        if (values.length === 1) for (const w of waiters.get(values[0]!)!) w.reject(err);
        // A value the database refuses (PostgreSQL: a NUL character) must not
        // fail the lookups that shared its query: each is asked on its own.
        else for (const value of values) this.answer(query, [value], waiters, version);
      },
    );
  }
}

/** Rows kept per query; past it, that query's rows are dropped and read again. */
const KEPT_ROWS_LIMIT = 10_000;

/**
 * Rows kept while their source's version stays the same (on a SQLite file:
 * until the next commit, by any connection or process), so a read-mostly
 * load (userinfo, introspection) skips the query and its hop to the pool
 * thread: ~30% of a userinfo's or an introspection's instructions. A turn's lookups share one look at the
 * version, and a kept row answers them without a query. A row is kept with
 * the version looked at before its query started, so a commit during the
 * query makes it look stale, never the other way round: a revocation, a
 * disabled or deleted user or a deleted application (one commit each) is
 * seen by the next lookup. Under writes (token issuance) rows are seldom
 * found unchanged.
 */
class KeptRows {
  private readonly rows = new Map<RowQuery, Map<string, { version: number; row: unknown }>>();

  /** The row kept for `value` if read at `version`. */
  row(query: RowQuery, value: string, version: number): unknown {
    const kept = this.rows.get(query)?.get(value);
    return kept?.version === version ? kept.row : undefined;
  }

  keep(query: RowQuery, value: string, row: unknown, version: number): void {
    let rows = this.rows.get(query);
    if (!rows) this.rows.set(query, (rows = new Map()));
    if (rows.size >= KEPT_ROWS_LIMIT) rows.clear();
    // Shared by every lookup it answers: none may change it.
    rows.set(value, { version, row: Object.freeze(row) });
  }

  clear(): void {
    this.rows.clear();
  }
}

class KnexRows implements RowSource {
  constructor(private readonly db: Db) {}

  async rows(query: RowQuery, values: readonly string[]): Promise<Record<string, unknown>[]> {
    return query.build(this.db, values);
  }

  async close(): Promise<void> {}
}

/** Stands for a looked-up value in the SQL Knex builds once per statement. */
const PLACEHOLDER = "\u0000row-reader-value\u0000";
/**
 * SQLite runs one statement at a time per connection, and a lookup spends
 * part of its time waiting for the main thread to take its result, so as many
 * connections as libuv pool threads (4 by default). Against 2, userinfo (then
 * two lookups a request) went from ~2,500 to ~3,200 req/s; introspection and
 * client_credentials did not change.
 */
const READ_CONNECTIONS = 4;
/**
 * node-sqlite3 starts a statement's next call only after the main thread has
 * handled the previous one's result, so one statement per connection would
 * advance one query per event-loop turn under load. Several copies keep
 * the connection busy.
 */
const STATEMENTS_PER_CONNECTION = 2;
/** A statement takes a fixed number of values, so batches are padded up to the next of these sizes. */
const BATCH_SIZES = [1, 2, 4, 8, 16, MAX_BATCH];

interface PreparedLookup {
  statements: sqlite3.Statement[];
  bindings: readonly unknown[];
}

/**
 * Why not Knex here: each Knex query is built, compiled and queued for the
 * single read-write connection, which also serialises every write. In WAL
 * mode readers never block the writer nor each other, and each statement
 * sees everything committed before it starts, so a revocation committed on
 * the write connection (or by another process) is seen by the next lookup.
 * The SQL itself is still Knex's, compiled once per query and batch size.
 */
class SqliteRows implements RowSource {
  private connections: Promise<sqlite3.Database[]> | undefined;
  /** Opened once the read connections are: while they are, SQLite keeps the `-shm` file it reads. */
  private changes: SqliteChangeWatch | undefined;
  private readonly lookups = new Map<string, Promise<PreparedLookup>>();
  private next = 0;

  constructor(
    private readonly db: Db,
    private readonly file: string,
  ) {}

  rows(query: RowQuery, values: readonly string[]): Promise<Record<string, unknown>[]> {
    if (!tracing()) return this.preparedRows(query, values);
    // One span per batch, under the request whose lookup opened the batch.
    const attributes = { "db.system.name": "sqlite", "db.operation.name": "SELECT", "db.query.summary": query.name, "db.operation.batch.size": values.length };
    return span("db SELECT", "client", attributes, () => this.preparedRows(query, values));
  }

  private async preparedRows(query: RowQuery, values: readonly string[]): Promise<Record<string, unknown>[]> {
    const size = BATCH_SIZES.find((s) => s >= values.length)!;
    const name = `${query.name} x${size}`;
    let lookup = this.lookups.get(name);
    if (!lookup) {
      lookup = this.prepare(query, size);
      this.lookups.set(name, lookup);
      lookup.catch(() => this.lookups.delete(name));
    }
    const { statements, bindings } = await lookup;
    const statement = statements[this.next++ % statements.length]!;
    // Padding repeats a value: the same row, found once.
    let slot = 0;
    const params = bindings.map((b) => (b === PLACEHOLDER ? (values[slot++] ?? values[0]) : b));
    // `all`, not `get`: `get` stops at the first row and leaves the statement
    // active, which keeps its read transaction (and a stale snapshot) open.
    // These statements bypass Knex, so they keep the query deadline (deadlines.ts) here.
    const deadlineMs = queryDeadlineMs(this.db);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new DatabaseDeadlineError(deadlineMs)), deadlineMs);
      statement.all(params, (err: Error | null, rows: Record<string, unknown>[]) => {
        clearTimeout(timer);
        if (err) reject(err);
        else resolve(rows);
      });
    });
  }

  version(): number | undefined {
    return this.changes?.current();
  }

  async close(): Promise<void> {
    const connections = await this.connections?.catch(() => []);
    this.connections = undefined;
    this.changes?.close();
    this.changes = undefined;
    this.lookups.clear();
    await Promise.all((connections ?? []).map((c) => new Promise<void>((resolve) => c.close(() => resolve()))));
  }

  private async prepare(query: RowQuery, size: number): Promise<PreparedLookup> {
    const { sql, bindings } = query.build(this.db, Array<string>(size).fill(PLACEHOLDER)).toSQL().toNative();
    const connections = await this.open();
    const statements = await Promise.all(
      Array.from({ length: STATEMENTS_PER_CONNECTION }, () => connections).flat().map(
        (c) => new Promise<sqlite3.Statement>((resolve, reject) => {
          const statement = c.prepare(sql, (err) => (err ? reject(err) : resolve(statement)));
        }),
      ),
    );
    return { statements, bindings };
  }

  private open(): Promise<sqlite3.Database[]> {
    // A checkpoint may hold the WAL index for a moment: wait, within the deadline, instead of failing.
    const busyTimeoutMs = queryDeadlineMs(this.db);
    this.connections ??= Promise.all(
      Array.from({ length: READ_CONNECTIONS }, () => openSqliteConnection(this.file, sqlite3.OPEN_READONLY, busyTimeoutMs)),
    ).then((connections) => {
      this.changes = new SqliteChangeWatch(this.file);
      return connections;
    });
    return this.connections;
  }
}
