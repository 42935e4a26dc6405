import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import knex from "knex";
import { isPostgresUrl, openDb, parsePostgresUrl, type Db } from "../../src/store/db.js";
import { createStore, type Store } from "../../src/store/index.js";
import { fastPathsFrom, storePaths } from "../../src/app/server.js";
import { DEFAULT_QUERY_TIMEOUT_MS } from "../../src/store/deadlines.js";
import { scaledMs } from "./deadline.js";

/** The PostgreSQL server the PostgreSQL legs use: DATABASE_URL, when it names one. */
export const POSTGRES_URL = process.env.DATABASE_URL && isPostgresUrl(process.env.DATABASE_URL) ? process.env.DATABASE_URL : undefined;

export const POSTGRES_SKIP_MESSAGE = "PostgreSQL leg skipped: DATABASE_URL not set";

/** A schema of its own for one test run, so runs never see each other's rows. */
export interface PostgresSchema {
  /** POSTGRES_URL with `?schema=` naming the new schema (openDb creates it). */
  url: string;
  schema: string;
  drop(): Promise<void>;
}

export function freshPostgresSchema(): PostgresSchema {
  if (!POSTGRES_URL) throw new Error(POSTGRES_SKIP_MESSAGE);
  const schema = `identity_test_${randomBytes(6).toString("hex")}`;
  const url = new URL(POSTGRES_URL);
  url.searchParams.set("schema", schema);
  return {
    url: url.toString(),
    schema,
    async drop() {
      const admin = knex({ client: "pg", connection: parsePostgresUrl(POSTGRES_URL!).connectionString, pool: { min: 0, max: 1 } });
      try {
        await admin.raw("drop schema if exists ?? cascade", [schema]);
      } finally {
        await admin.destroy();
      }
    },
  };
}

/** A fresh, empty database of one backend, not opened yet. */
export interface FreshDatabase {
  /** What to give openDb or the server's `database` option. */
  url: string;
  /** Remove it; call once everything using it has closed. */
  dispose(): Promise<void>;
}

export interface Backend {
  name: string;
  /** Why the backend cannot run here, if it cannot. */
  unavailable?: string;
  /** A database no other run sees. */
  fresh(): FreshDatabase;
}

/** Every storage backend, defined once. Suites run their whole body per entry. */
export const BACKENDS: readonly Backend[] = [
  {
    name: "SQLite :memory:",
    // Every connection to :memory: is a database of its own.
    fresh: () => ({ url: ":memory:", dispose: async () => {} }),
  },
  {
    name: "SQLite file",
    fresh() {
      const dir = mkdtempSync(join(tmpdir(), "identity-store-"));
      return { url: join(dir, "identity.sqlite"), dispose: async () => rmSync(dir, { recursive: true, force: true }) };
    },
  },
  {
    name: "PostgreSQL",
    unavailable: POSTGRES_URL ? undefined : POSTGRES_SKIP_MESSAGE,
    fresh: () => {
      const schema = freshPostgresSchema();
      return { url: schema.url, dispose: () => schema.drop() };
    },
  },
];

/**
 * IDENTITY_TEST_DATABASE: the backend of every test that asks for no
 * database in particular (startTestServer without `database`, and the other
 * support defaults). `sqlite` (the default) is `:memory:`; `postgres` is a
 * fresh schema of DATABASE_URL each time, dropped when its user closes.
 */
const TEST_DATABASE = testDatabaseFrom(process.env.IDENTITY_TEST_DATABASE);

function testDatabaseFrom(value: string | undefined): "sqlite" | "postgres" {
  if (value === undefined || value === "" || value === "sqlite") return "sqlite";
  if (value !== "postgres") throw new Error(`IDENTITY_TEST_DATABASE must be sqlite or postgres, not ${value}`);
  // A switch that quietly fell back to SQLite would pass for a PostgreSQL run.
  if (!POSTGRES_URL) throw new Error("IDENTITY_TEST_DATABASE=postgres needs DATABASE_URL=postgres://...");
  return "postgres";
}

/** True when the suite runs on PostgreSQL by default (IDENTITY_TEST_DATABASE=postgres). */
export const ON_POSTGRES = TEST_DATABASE === "postgres";

/** A fresh database of the default test backend: `:memory:`, or a PostgreSQL schema of its own under the switch. */
export function freshTestDatabase(): FreshDatabase {
  return BACKENDS.find((b) => b.name === (ON_POSTGRES ? "PostgreSQL" : "SQLite :memory:"))!.fresh();
}

/**
 * A fresh database that several servers or commands open in turn: a SQLite
 * file (`:memory:` would be a new database each time), or a PostgreSQL
 * schema of its own under the switch.
 */
export function freshSharedTestDatabase(): FreshDatabase {
  return BACKENDS.find((b) => b.name === (ON_POSTGRES ? "PostgreSQL" : "SQLite file"))!.fresh();
}

/** A fresh database of the default test backend, opened and migrated; `close` destroys and removes it. */
export async function openTestDb(): Promise<{ db: Db; close(): Promise<void> }> {
  const fresh = freshTestDatabase();
  let db: Db;
  try {
    db = await openDb({ url: fresh.url });
  } catch (err) {
    await fresh.dispose();
    throw err;
  }
  return {
    db,
    async close() {
      try {
        await db.destroy();
      } finally {
        await fresh.dispose();
      }
    },
  };
}

/**
 * One `describe` per backend around `body`; a backend that cannot run here
 * shows up as a pending test that says why.
 */
function describePerBackend(title: string, backends: readonly Backend[], body: (backend: Backend) => void): void {
  describe(title, () => {
    for (const backend of backends) {
      describe(backend.name, () => {
        if (backend.unavailable) {
          it.skip(backend.unavailable);
          return;
        }
        body(backend);
      });
    }
  });
}

/** What a database suite sees; filled in by the backend's `before` hook. */
export interface DatabaseContext {
  backend: Backend;
  /** A fresh database of this backend, for the suite's servers to share. */
  url: string;
}

/**
 * Define `body` once and run it against every backend, given a fresh
 * database URL (removed after the suite) and nothing opened: for suites
 * that start servers on it.
 */
export function describeEachDatabase(title: string, body: (ctx: DatabaseContext) => void, backends: readonly Backend[] = BACKENDS): void {
  describePerBackend(title, backends, (backend) => {
    const ctx = { backend } as DatabaseContext;
    let database: FreshDatabase | undefined;
    before(() => {
      database = backend.fresh();
      ctx.url = database.url;
    });
    body(ctx);
    // Registered after the body's hooks, so it runs after they closed their servers.
    after(() => database?.dispose());
  });
}

/** What a storage suite sees; filled in by the backend's `before` hook. */
export interface BackendContext extends DatabaseContext {
  db: Db;
  store: Store;
}

/**
 * Define `body` once and run it against every backend, on a fresh database
 * opened and migrated before the suite and disposed after it.
 */
export function describeEachBackend(title: string, body: (ctx: BackendContext) => void, backends: readonly Backend[] = BACKENDS): void {
  describePerBackend(title, backends, (backend) => {
    const ctx = { backend } as BackendContext;
    let database: FreshDatabase | undefined;
    before(async () => {
      database = backend.fresh();
      // The store's query deadline, scaled by the load: a test's long statement must not meet it because the CPU is shared.
      const db = await openDb({ url: database.url, queryTimeoutMs: scaledMs(DEFAULT_QUERY_TIMEOUT_MS) });
      // The store as the server builds it: under IDENTITY_PLAIN_PATHS=1, hot lookups by plain Knex queries.
      const store = createStore(db, storePaths(fastPathsFrom(process.env.IDENTITY_PLAIN_PATHS)));
      Object.assign(ctx, { url: database.url, db, store });
    });
    body(ctx);
    after(async () => {
      await ctx.store?.close();
      await ctx.db?.destroy();
      await database?.dispose();
    });
  });
}

/** A suite that needs PostgreSQL itself: a visible skip without DATABASE_URL. */
export function describePostgres(title: string, body: () => void): void {
  describe(title, () => {
    if (!POSTGRES_URL) {
      it.skip(POSTGRES_SKIP_MESSAGE);
      return;
    }
    body();
  });
}
