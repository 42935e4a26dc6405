import { createHash } from "node:crypto";
import knex, { type Knex } from "knex";
import pg from "pg";
import sqlite3 from "sqlite3";
import { DEFAULT_QUERY_TIMEOUT_MS, withDeadlines, withoutDeadline } from "./deadlines.js";
import { isUniqueViolation } from "./errors.js";
import { prepareSqliteFile } from "./fileModes.js";
import { migrations } from "./migrations/index.js";

export type Db = Knex;

/** PostgreSQL settings; SQLite ignores them (one connection, local file). */
export interface PostgresOptions {
  /** Connections kept open when idle. */
  poolMin: number;
  /** Most connections per instance; at least 2, since a startup lock pins one. */
  poolMax: number;
  /** Longest wait for a new connection or a free pooled one, in ms. */
  connectTimeoutMs: number;
  /** Server-side limit on one statement, in ms. */
  statementTimeoutMs: number;
}

export const POSTGRES_DEFAULTS: PostgresOptions = {
  poolMin: 0,
  poolMax: 10,
  connectTimeoutMs: 5000,
  statementTimeoutMs: 15000,
};

export interface DbOptions extends Partial<PostgresOptions> {
  /** Deadline of each database call, in ms (DEFAULT_QUERY_TIMEOUT_MS). */
  queryTimeoutMs?: number;
  /**
   * A file path, `:memory:`, or a `postgres://` URL. A `?schema=name`
   * parameter on the URL puts every table in that schema (created if missing).
   */
  url: string;
  /** Where the driver's warnings go (default: stderr). */
  log?: (message: string) => void;
}

// PostgreSQL returns int8 as strings; every bigint we store is an epoch
// millisecond count, well inside Number's safe range.
pg.types.setTypeParser(pg.types.builtins.INT8, (value: string) => Number(value));

export function isPostgresUrl(url: string): boolean {
  return /^postgres(ql)?:\/\//.test(url);
}

export function isPostgres(db: Db): boolean {
  return db.client.driverName === "pg";
}

/** Where Knex finds the migrations and records which have run. */
export const MIGRATIONS = { migrationSource: migrations, tableName: "knex_migrations" };

/** Open the database and bring its schema up to date. */
export async function openDb(options: DbOptions): Promise<Db> {
  const db = connectDb(options);
  try {
    await migrate(db);
  } catch (err) {
    await db.destroy();
    throw err;
  }
  return db;
}

/**
 * Run the pending migrations and return their names. Refuses a database
 * that has run a migration this build does not know (NewerDatabaseError).
 */
export async function migrate(db: Db): Promise<string[]> {
  await createSchema(db);
  // Knex's own lock row cannot guard its first run: several instances
  // starting on an empty schema race to create the migration tables. The
  // advisory lock serialises the whole step; knex's lock still guards the batch.
  // No deadline while migrating: a long index build is not a request.
  return withoutDeadline(db, () => withDbLock(db, "migrate", async () => {
    const { unknown } = await migrationStatus(db);
    if (unknown.length > 0) throw new NewerDatabaseError(unknown);
    const [, ran] = (await db.migrate.latest({
      ...MIGRATIONS,
      // A long index build must not trip the per-statement limit.
      beforeAll: async (trx: Knex) => {
        if (isPostgres(db)) await trx.raw("set local statement_timeout = 0");
      },
    })) as [number, string[]];
    return ran;
  }));
}

/** Open the database as it is, without migrating it (`identity migrate --status`). */
export function connectDb(options: DbOptions): Db {
  const log = options.log ?? ((message: string) => process.stderr.write(`database: ${message}\n`));
  const queryTimeoutMs = options.queryTimeoutMs ?? DEFAULT_QUERY_TIMEOUT_MS;
  if (!(queryTimeoutMs > 0)) throw new Error("the database query deadline must be positive");
  return isPostgresUrl(options.url) ? openPostgres(options, queryTimeoutMs, log) : openSqlite(options.url, queryTimeoutMs, log);
}

/** Which migrations a database has run, which this build would run, and which it does not know. */
export interface MigrationStatus {
  /** Run on this database, in the order they ran (unknown ones included). */
  applied: string[];
  /** Known to this build and not run yet, in the order they would run. */
  pending: string[];
  /** Run on this database but not part of this build: a newer version migrated it. */
  unknown: string[];
}

export async function migrationStatus(db: Db): Promise<MigrationStatus> {
  // Knex would refuse a list with migrations it does not know; we name them instead.
  const [completed, pending] = (await db.migrate.list({ ...MIGRATIONS, disableMigrationsListValidation: true })) as [
    { name: string }[],
    Parameters<typeof migrations.getMigrationName>[0][],
  ];
  const known = new Set((await migrations.getMigrations([])).map((m) => migrations.getMigrationName(m)));
  const applied = completed.map((row) => row.name);
  return { applied, pending: pending.map((m) => migrations.getMigrationName(m)), unknown: applied.filter((name) => !known.has(name)) };
}

/** The database was migrated by a newer build: starting on it could misread or damage its data. */
export class NewerDatabaseError extends Error {
  constructor(readonly unknown: string[]) {
    super(
      `the database is newer than this build: it has migrations this build does not know (${unknown.join(", ")}). ` +
        "Run the version that migrated it, or restore a backup taken before the upgrade (docs/operations.md, Backups)",
    );
    this.name = "NewerDatabaseError";
  }
}

/** Split `?schema=` off a PostgreSQL URL; the driver would reject or ignore it. */
export function parsePostgresUrl(url: string): { connectionString: string; schema?: string } {
  const parsed = new URL(url);
  const schema = parsed.searchParams.get("schema") ?? undefined;
  if (schema !== undefined && !/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(schema)) {
    throw new Error(`invalid schema name in database URL: ${schema}`);
  }
  parsed.searchParams.delete("schema");
  return { connectionString: parsed.toString(), schema };
}

function openPostgres(options: DbOptions, queryTimeoutMs: number, log: (message: string) => void): Db {
  const settings: PostgresOptions = {
    poolMin: options.poolMin ?? POSTGRES_DEFAULTS.poolMin,
    poolMax: options.poolMax ?? POSTGRES_DEFAULTS.poolMax,
    connectTimeoutMs: options.connectTimeoutMs ?? POSTGRES_DEFAULTS.connectTimeoutMs,
    statementTimeoutMs: options.statementTimeoutMs ?? POSTGRES_DEFAULTS.statementTimeoutMs,
  };
  if (settings.poolMax < 2) throw new Error("the PostgreSQL pool needs at least 2 connections");
  if (settings.poolMin > settings.poolMax) throw new Error("the PostgreSQL pool minimum exceeds its maximum");
  const { connectionString, schema } = parsePostgresUrl(options.url);
  return knex({
    client: withDeadlines("pg", queryTimeoutMs),
    connection: {
      connectionString,
      connectionTimeoutMillis: settings.connectTimeoutMs,
      statement_timeout: settings.statementTimeoutMs,
      keepAlive: true,
      application_name: "identity-service",
    },
    searchPath: schema ? [schema] : undefined,
    pool: { min: settings.poolMin, max: settings.poolMax },
    // A dead database or an exhausted pool fails the request instead of queueing it for a minute.
    acquireConnectionTimeout: Math.min(settings.connectTimeoutMs, queryTimeoutMs),
    log: knexLog(log),
  });
}

/**
 * Whether `url` names a SQLite database that lives in the memory of the
 * connection that opens it (`:memory:`, a `file:` URI in memory mode, or ""
 * for a private temporary one): no other process, or connection, sees it.
 */
export function isPrivateSqlite(url: string): boolean {
  if (url === "" || url === ":memory:") return true;
  if (!url.startsWith("file:")) return false;
  const [path, query = ""] = url.slice("file:".length).split("?");
  return path === ":memory:" || path === "" || new URLSearchParams(query).get("mode") === "memory";
}

/** The SQLite file behind `db`, when other connections can open it too. */
export function sqliteFile(db: Db): string | undefined {
  if (db.client.driverName !== "sqlite3") return undefined;
  const filename = (db.client.config.connection as { filename?: string }).filename;
  // An in-memory database exists only on the connection that made it.
  return filename && filename !== ":memory:" && !filename.startsWith("file:") ? filename : undefined;
}

/** A node-sqlite3 connection of its own to `file`, beside Knex's; with a busy timeout, it waits out locks that long. */
export function openSqliteConnection(file: string, mode: number, busyTimeoutMs?: number): Promise<sqlite3.Database> {
  return new Promise((resolve, reject) => {
    const connection = new sqlite3.Database(file, mode, (err) => {
      if (err) return reject(err);
      if (busyTimeoutMs !== undefined) connection.configure("busyTimeout", busyTimeoutMs);
      resolve(connection);
    });
  });
}

/** How every connection that writes a SQLite file runs (openSqlite's comment says why). */
const SQLITE_WRITER_PRAGMAS = "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON; PRAGMA wal_autocheckpoint=10000;";

/** A connection of its own that writes `file`, set up as Knex's is; with a busy timeout, it waits out locks that long. */
export async function openSqliteWriter(file: string, busyTimeoutMs: number): Promise<sqlite3.Database> {
  const connection = await openSqliteConnection(file, sqlite3.OPEN_READWRITE, busyTimeoutMs);
  try {
    await new Promise<void>((resolve, reject) => connection.exec(SQLITE_WRITER_PRAGMAS, (err) => (err ? reject(err) : resolve())));
    return connection;
  } catch (err) {
    connection.close();
    throw err;
  }
}

function openSqlite(path: string, queryTimeoutMs: number, log: (message: string) => void): Db {
  // A file of our own making is private from its first byte (fileModes.ts); URIs are SQLite's to open.
  if (!isPrivateSqlite(path) && !path.startsWith("file:")) prepareSqliteFile(path);
  return knex({
    client: withDeadlines("sqlite3", queryTimeoutMs),
    connection: { filename: path },
    useNullAsDefault: true,
    log: knexLog(log),
    // Callers queue for the one connection; no longer than their deadline.
    acquireConnectionTimeout: queryTimeoutMs,
    // One connection: SQLite serialises writers anyway, and `:memory:` is
    // per-connection. Transactions then never interleave inside a process.
    pool: {
      min: 1,
      max: 1,
      afterCreate(conn: sqlite3.Database, done: (err: Error | null, conn: unknown) => void) {
        // WAL with synchronous=NORMAL survives a process crash without losing
        // a committed transaction; busy_timeout lets several processes share a
        // file, waiting for another's lock no longer than a call's deadline.
        // Checkpoints run off the write path (walCheckpoints.ts); the
        // writer checkpoints itself only if those fall 10,000 pages behind.
        conn.configure("busyTimeout", Math.floor(queryTimeoutMs));
        conn.exec(SQLITE_WRITER_PRAGMAS, (err) => done(err, conn));
      },
    },
  });
}

/** The schema named by `?schema=`, if any. */
function schemaOf(db: Db): string | undefined {
  const path = db.client.config.searchPath as string[] | undefined;
  return path?.[0];
}

async function createSchema(db: Db): Promise<void> {
  const schema = schemaOf(db);
  if (!schema) return;
  try {
    await db.raw("create schema if not exists ??", [schema]);
  } catch (err) {
    // Two instances creating it at the same moment: the loser sees a duplicate key.
    if (!isUniqueViolation(err)) throw err;
  }
}

/**
 * The PostgreSQL advisory lock key (a bigint, as text) of the lock named
 * `name` on this database and schema: instances sharing both share it.
 */
function advisoryLockKey(db: Db, name: string): string {
  return createHash("sha256").update(`identity-service/${schemaOf(db) ?? ""}/${name}`).digest().readBigInt64BE(0).toString();
}

/**
 * Within transaction `trx`, wait for and hold until it ends the lock named
 * `name` that every instance on the same PostgreSQL database and schema
 * shares (a transaction advisory lock), so transactions of one name take
 * turns where READ COMMITTED would let them interleave. On SQLite nothing:
 * a write transaction holds the whole file.
 */
export async function lockForTransaction(trx: Db, name: string): Promise<void> {
  if (isPostgres(trx)) await trx.raw("select pg_advisory_xact_lock(cast(? as bigint))", [advisoryLockKey(trx, name)]);
}

/**
 * Run `fn` while holding a lock named `name` that every instance on the same
 * PostgreSQL database and schema shares (a session advisory lock on a pinned
 * connection, so `fn` must not need the whole pool). On SQLite it just runs
 * `fn`: one process owns the file and its single connection serialises work.
 */
export async function withDbLock<T>(db: Db, name: string, fn: () => Promise<T>): Promise<T> {
  if (!isPostgres(db)) return fn();
  const key = advisoryLockKey(db, name);
  const conn = (await db.client.acquireConnection()) as pg.Client;
  try {
    // Waiting for another instance's migration is not a slow statement.
    await conn.query("set statement_timeout = 0");
    await conn.query("select pg_advisory_lock($1::bigint)", [key]);
    try {
      return await fn();
    } finally {
      await conn.query("select pg_advisory_unlock($1::bigint)", [key]);
      await conn.query("reset statement_timeout");
    }
  } finally {
    await db.client.releaseConnection(conn);
  }
}

function knexLog(log: (message: string) => void): Knex.Config["log"] {
  const text = (message: unknown) => (message instanceof Error ? message.message : String(message));
  return { warn: (m) => log(text(m)), error: (m) => log(text(m)), deprecate: (m) => log(text(m)), debug: () => {} };
}
