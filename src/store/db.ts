import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import knex, { type Knex } from "knex";
import pg from "pg";
import { migrations } from "./migrations/index.js";

export type Db = Knex;

export interface DbOptions {
  /** A file path, `:memory:`, or a `postgres://` URL. */
  url: string;
  /** Connection pool bounds for PostgreSQL (SQLite always uses one connection). */
  poolMin?: number;
  poolMax?: number;
}

// PostgreSQL returns int8 as strings; every bigint we store is an epoch
// millisecond count, well inside Number's safe range.
pg.types.setTypeParser(pg.types.builtins.INT8, (value: string) => Number(value));

export function isPostgresUrl(url: string): boolean {
  return /^postgres(ql)?:\/\//.test(url);
}

/** Open the database and bring its schema up to date. */
export async function openDb(options: DbOptions): Promise<Db> {
  const db = isPostgresUrl(options.url) ? openPostgres(options) : openSqlite(options.url);
  try {
    await db.migrate.latest({ migrationSource: migrations, tableName: "knex_migrations" });
  } catch (err) {
    await db.destroy();
    throw err;
  }
  return db;
}

function openPostgres(options: DbOptions): Db {
  return knex({
    client: "pg",
    connection: options.url,
    pool: { min: options.poolMin ?? 0, max: options.poolMax ?? 10 },
  });
}

function openSqlite(path: string): Db {
  if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
  return knex({
    client: "sqlite3",
    connection: { filename: path },
    useNullAsDefault: true,
    // One connection: SQLite serialises writers anyway, and `:memory:` is
    // per-connection. Transactions then never interleave inside a process.
    pool: {
      min: 1,
      max: 1,
      afterCreate(conn: { exec(sql: string, cb: (err: Error | null) => void): void }, done: (err: Error | null, conn: unknown) => void) {
        // WAL with synchronous=NORMAL survives a process crash without losing
        // a committed transaction; busy_timeout lets several processes share a file.
        conn.exec(
          "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA busy_timeout=5000; PRAGMA foreign_keys=ON;",
          (err) => done(err, conn),
        );
      },
    },
  });
}
