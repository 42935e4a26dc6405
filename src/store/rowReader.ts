import type { Knex } from "knex";
import sqlite3 from "sqlite3";
import type { Db } from "./db.js";

/**
 * A read of at most one row, found by one value: the reads on every
 * request's hot path (a token by its hash, a client by its id, a user by id).
 */
export interface RowQuery {
  /** Names the query's prepared statements: one name, one query. */
  readonly name: string;
  build(db: Db, value: string): Knex.QueryBuilder;
}

/** The row of `table` whose `column` holds the value. */
export function rowBy(table: string, column: string): RowQuery {
  return { name: `${table}.${column}`, build: (db, value) => db(table).where(column, value).first() };
}

export interface RowReader {
  first<Row>(query: RowQuery, value: string): Promise<Row | undefined>;
  close(): Promise<void>;
}

/**
 * On a SQLite file, the hot reads run as prepared statements on read-only
 * connections of their own; everywhere else (PostgreSQL, `:memory:`) they go
 * through Knex like every other query.
 */
export function createRowReader(db: Db): RowReader {
  const file = sqliteFile(db);
  return file === undefined ? new KnexRowReader(db) : new SqliteRowReader(db, file);
}

function sqliteFile(db: Db): string | undefined {
  if (db.client.config.client !== "sqlite3") return undefined;
  const filename = (db.client.config.connection as { filename?: string }).filename;
  // An in-memory database exists only on the connection that made it.
  return filename && filename !== ":memory:" && !filename.startsWith("file:") ? filename : undefined;
}

class KnexRowReader implements RowReader {
  constructor(private readonly db: Db) {}

  async first<Row>(query: RowQuery, value: string): Promise<Row | undefined> {
    return query.build(this.db, value);
  }

  async close(): Promise<void> {}
}

/** Stands for the looked-up value in the SQL Knex builds once per statement. */
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
 * advance one lookup per event-loop turn under load. Several copies keep
 * the connection busy.
 */
const STATEMENTS_PER_CONNECTION = 8;

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
 * The SQL itself is still Knex's, compiled once per query.
 */
class SqliteRowReader implements RowReader {
  private connections: Promise<sqlite3.Database[]> | undefined;
  private readonly lookups = new Map<string, Promise<PreparedLookup>>();
  private next = 0;

  constructor(
    private readonly db: Db,
    private readonly file: string,
  ) {}

  async first<Row>(query: RowQuery, value: string): Promise<Row | undefined> {
    let lookup = this.lookups.get(query.name);
    if (!lookup) {
      lookup = this.prepare(query);
      this.lookups.set(query.name, lookup);
      lookup.catch(() => this.lookups.delete(query.name));
    }
    const { statements, bindings } = await lookup;
    const statement = statements[this.next++ % statements.length]!;
    const params = bindings.map((b) => (b === PLACEHOLDER ? value : b));
    // `all`, not `get`: `get` stops at the first row and leaves the statement
    // active, which keeps its read transaction (and a stale snapshot) open.
    return new Promise((resolve, reject) =>
      statement.all(params, (err: Error | null, rows: Row[]) => (err ? reject(err) : resolve(rows[0]))),
    );
  }

  async close(): Promise<void> {
    const connections = await this.connections?.catch(() => []);
    this.connections = undefined;
    this.lookups.clear();
    await Promise.all((connections ?? []).map((c) => new Promise<void>((resolve) => c.close(() => resolve()))));
  }

  private async prepare(query: RowQuery): Promise<PreparedLookup> {
    const { sql, bindings } = query.build(this.db, PLACEHOLDER).toSQL().toNative();
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
    this.connections ??= Promise.all(
      Array.from({ length: READ_CONNECTIONS }, () => openReadOnly(this.file)),
    );
    return this.connections;
  }
}

function openReadOnly(file: string): Promise<sqlite3.Database> {
  return new Promise((resolve, reject) => {
    const connection = new sqlite3.Database(file, sqlite3.OPEN_READONLY, (err) => {
      if (err) return reject(err);
      // A checkpoint may hold the WAL index for a moment; wait instead of failing.
      connection.exec("PRAGMA busy_timeout=5000;", (pragmaErr) => (pragmaErr ? reject(pragmaErr) : resolve(connection)));
    });
  });
}
