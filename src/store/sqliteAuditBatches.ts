import type sqlite3 from "sqlite3";
import { openSqliteWriter, sqliteFile, type Db } from "./db.js";
import { queryDeadlineMs } from "./deadlines.js";

/** Writes one batch of audit events, given as the JSON text of its rows (AuditEventRepository). */
export interface AuditBatchInsert {
  insert(batchJson: string): Promise<void>;
  close(): Promise<void>;
  /** "own connection": staged on a connection of its own (the fast path); "shared connection": on the pool's. */
  readonly path: "own connection" | "shared connection";
}

/**
 * On SQLite a batch is one JSON array of arrays that json_each takes apart,
 * in order, each row's values in the column order below, here into the
 * connection's own TEMP table. The rows are first copied out of json_each
 * into a materialized table: read straight from json_each, the row's text
 * was rendered anew for each of its eleven json_extract calls (callgrind:
 * ~55k instructions per event in SQLite before, ~29k after).
 */
const STAGE =
  "with batch (n, item) as materialized (select key, value from json_each(?)) " +
  "insert into temp.audit_batch (time, event, outcome, actor_kind, actor_id, actor_name, client_address, client_id, user_id, user_name, details) " +
  "select json_extract(item, '$[0]'), json_extract(item, '$[1]'), json_extract(item, '$[2]'), json_extract(item, '$[3]'), json_extract(item, '$[4]'), json_extract(item, '$[5]'), json_extract(item, '$[6]'), json_extract(item, '$[7]'), json_extract(item, '$[8]'), json_extract(item, '$[9]'), json_extract(item, '$[10]') " +
  "from batch order by n";
const SET_UP_STAGE =
  "PRAGMA temp_store=MEMORY; create temp table if not exists audit_batch (time, event, outcome, actor_kind, actor_id, actor_name, client_address, client_id, user_id, user_name, details)";
const COPY_STAGED =
  "insert into main.audit_events (time, event, outcome, actor_kind, actor_id, actor_name, client_address, client_id, user_id, user_name, details) " +
  "select time, event, outcome, actor_kind, actor_id, actor_name, client_address, client_id, user_id, user_name, details from temp.audit_batch order by rowid";
const CLEAR_STAGED = "delete from temp.audit_batch";

/**
 * Audit batches on SQLite: on a database file, from a connection of their
 * own; on `:memory:` (Knex's one connection's own database), on Knex's,
 * borrowed for the batch.
 *
 * Why: on Knex's one connection every token write waited behind a whole
 * batch, taking it apart included (~1 of the ~3 µs an event costs SQLite).
 * Here it is taken apart into a TEMP table, which locks nothing in the
 * database file, and only the copy into audit_events takes the write lock.
 * Fresh pairs of servers under opaque client_credentials load, their files
 * in RAM: 1.02x of the same batches through Knex's connection (docs/audit.md).
 */
export function sqliteAuditBatches(db: Db, ownConnection = true): AuditBatchInsert {
  const file = sqliteFile(db);
  if (file === undefined || !ownConnection) {
    return {
      insert: async (batchJson) => {
        const connection = (await db.client.acquireConnection()) as sqlite3.Database;
        try {
          // Each time: the pool may have replaced the connection, and the table is created only if missing.
          await createStage(connection);
          await writeStaged(connection, batchJson);
        } finally {
          await db.client.releaseConnection(connection);
        }
      },
      close: async () => {},
      path: "shared connection",
    };
  }
  return new OwnConnectionBatches(file, queryDeadlineMs(db));
}

class OwnConnectionBatches implements AuditBatchInsert {
  readonly path = "own connection";
  private connection: Promise<sqlite3.Database> | undefined;

  /** `busyTimeoutMs`: how long the copy waits for another connection's write lock before it fails (and is tried again). */
  constructor(
    private readonly file: string,
    private readonly busyTimeoutMs: number,
  ) {}

  async insert(batchJson: string): Promise<void> {
    await writeStaged(await this.open(), batchJson);
  }

  async close(): Promise<void> {
    const connection = await this.connection?.catch(() => undefined);
    this.connection = undefined;
    if (connection) await new Promise<void>((resolve) => connection.close(() => resolve()));
  }

  private open(): Promise<sqlite3.Database> {
    this.connection ??= openSqliteWriter(this.file, this.busyTimeoutMs)
      .then(async (connection) => {
        try {
          await createStage(connection);
          return connection;
        } catch (err) {
          connection.close();
          throw err;
        }
      })
      .catch((err: unknown) => {
        // The next batch tries to open it again.
        this.connection = undefined;
        throw err;
      });
    return this.connection;
  }
}

const createStage = (connection: sqlite3.Database) =>
  new Promise<void>((resolve, reject) => connection.exec(SET_UP_STAGE, (err: Error | null) => (err ? reject(err) : resolve())));

async function writeStaged(connection: sqlite3.Database, batchJson: string): Promise<void> {
  // Rows left staged by a copy that failed go first: the writer tries their batch again.
  await run(connection, CLEAR_STAGED);
  await run(connection, STAGE, [batchJson]);
  await run(connection, COPY_STAGED);
  await run(connection, CLEAR_STAGED);
}

const run = (connection: sqlite3.Database, sql: string, params: unknown[] = []) =>
  new Promise<void>((resolve, reject) => connection.run(sql, params, (err: Error | null) => (err ? reject(err) : resolve())));
