import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import knex from "knex";
import { isPostgresUrl, openDb, parsePostgresUrl, type Db } from "../../src/store/db.js";
import { createStore, type Store } from "../../src/store/index.js";

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

/** An open, migrated database of one backend and how to throw it away. */
export interface OpenedBackend {
  db: Db;
  /** The URL openDb was given, for a second connection to the same database. */
  url: string;
  dispose(): Promise<void>;
}

export interface Backend {
  name: string;
  /** Why the backend cannot run here, if it cannot. */
  unavailable?: string;
  open(): Promise<OpenedBackend>;
}

/** Every storage backend, defined once. Suites run their whole body per entry. */
export const BACKENDS: readonly Backend[] = [
  {
    name: "SQLite :memory:",
    async open() {
      const db = await openDb({ url: ":memory:" });
      return { db, url: ":memory:", dispose: () => db.destroy() };
    },
  },
  {
    name: "SQLite file",
    async open() {
      const dir = mkdtempSync(join(tmpdir(), "identity-store-"));
      const url = join(dir, "identity.sqlite");
      const db = await openDb({ url });
      return {
        db,
        url,
        async dispose() {
          await db.destroy();
          rmSync(dir, { recursive: true, force: true });
        },
      };
    },
  },
  {
    name: "PostgreSQL",
    unavailable: POSTGRES_URL ? undefined : POSTGRES_SKIP_MESSAGE,
    async open() {
      const schema = freshPostgresSchema();
      const db = await openDb({ url: schema.url });
      return {
        db,
        url: schema.url,
        async dispose() {
          await db.destroy();
          await schema.drop();
        },
      };
    },
  },
];

/** What a suite body sees; filled in by the backend's `before` hook. */
export interface BackendContext {
  backend: Backend;
  db: Db;
  store: Store;
  url: string;
}

/**
 * Define `body` once and run it against every backend: one `describe` per
 * backend, its database opened before and disposed after. A backend that
 * cannot run here shows up as a pending test that says why.
 */
export function describeEachBackend(title: string, body: (ctx: BackendContext) => void, backends: readonly Backend[] = BACKENDS): void {
  describe(title, () => {
    for (const backend of backends) {
      describe(backend.name, () => {
        if (backend.unavailable) {
          it.skip(backend.unavailable);
          return;
        }
        const ctx = { backend } as BackendContext;
        let opened: OpenedBackend | undefined;
        before(async () => {
          opened = await backend.open();
          Object.assign(ctx, { db: opened.db, store: createStore(opened.db), url: opened.url });
        });
        after(() => opened?.dispose());
        body(ctx);
      });
    }
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
