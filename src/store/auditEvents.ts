import type { Sweep } from "./cleanup.js";
import { isPostgres, type Db } from "./db.js";
import type { AuditEvent, AuditEventName, AuditOutcome } from "../shared/audit.js";
import type { Logger } from "../shared/log.js";
import { sqliteAuditBatches, type AuditBatchInsert } from "./sqliteAuditBatches.js";

/** A stored event, with its id: the order events were written in. */
export interface StoredAuditEvent extends AuditEvent {
  id: string;
}

/** Which events to list; absent fields do not filter. */
export interface AuditEventFilter {
  /** Events about the user of this name (their sign-ins and tokens, changes made to them). */
  userName?: string;
  clientId?: string;
  event?: string;
  /** Epoch ms: events at or after it. */
  since?: number;
  /** The id of the last event of the previous page: events written before it. */
  before?: string;
}

interface AuditEventRow {
  id?: number | string;
  time: number | string;
  event: string;
  outcome: string;
  actor_kind: string;
  actor_id: string;
  actor_name: string;
  client_address: string | null;
  client_id: string | null;
  user_id: string | null;
  user_name: string | null;
  details: string | null;
}

/**
 * An event as the values of a row, in INSERT_SQLITE's and INSERT_POSTGRES's
 * column order. The details stay an object inside the batch's JSON: the
 * database stores that element's text (json_extract, ->>), the same as
 * JSON.stringify of it, without a second serialization and escaping.
 */
const toValues = (e: AuditEvent): unknown[] => [
  e.time,
  e.event,
  e.outcome,
  e.actor.kind,
  e.actor.id,
  e.actor.name,
  e.clientAddress,
  e.clientId,
  e.userId,
  e.userName,
  e.details,
];

const fromRow = (r: AuditEventRow): StoredAuditEvent => ({
  id: String(r.id),
  time: Number(r.time),
  event: r.event as AuditEventName,
  outcome: r.outcome as AuditOutcome,
  actor: { kind: r.actor_kind as StoredAuditEvent["actor"]["kind"], id: r.actor_id, name: r.actor_name },
  clientAddress: r.client_address,
  clientId: r.client_id,
  userId: r.user_id,
  userName: r.user_name,
  details: r.details === null ? null : (JSON.parse(r.details) as Record<string, unknown>),
});

/**
 * A batch is bound as one value, the rows as a JSON array of arrays the
 * database takes apart in one statement (SQLite's json_each,
 * sqliteAuditBatches.ts; PostgreSQL's json_array_elements, below), in
 * order. Binding eleven values a row cost ~7 µs of the event loop per
 * event, through Knex's insert builder and the driver; JSON.stringify of the
 * batch costs ~1. A row is an array, not an object: shorter text for the
 * database to parse. The statements are written out, as every raw statement is
 * (test/hardening/injection.spec.ts), with toValues's columns in one order.
 */
const INSERT_POSTGRES =
  "insert into audit_events (time, event, outcome, actor_kind, actor_id, actor_name, client_address, client_id, user_id, user_name, details) " +
  "select (e.item->>0)::bigint, e.item->>1, e.item->>2, e.item->>3, e.item->>4, e.item->>5, e.item->>6, e.item->>7, e.item->>8, e.item->>9, e.item->>10 " +
  "from json_array_elements(?::json) with ordinality as e(item, n) order by e.n";

/** On PostgreSQL, a batch goes through any connection of the pool. */
const postgresBatches = (db: Db): AuditBatchInsert => ({
  insert: async (batchJson) => void (await db.raw(INSERT_POSTGRES, [batchJson])),
  close: async () => {},
  path: "shared connection",
});

/**
 * The contract (test/store/auditEvents.spec.ts, every backend):
 * - append-only: insertMany() adds every event it is given, in order, and
 *   nothing changes a stored one ("stores every event of a batch");
 * - ordered: list() answers newest first (by id, the order they were
 *   written), a page at a time, and a page starting `before` the last event
 *   of the previous one neither repeats nor skips an event ("pages through
 *   newest first");
 * - filtered: list() by user name, client id, event name and time ("filters
 *   by user, client, type and time");
 * - pruned: the cleanup sweep of auditEventSweep() deletes events older than
 *   the retention and nothing newer ("prunes events past the retention").
 */
export class AuditEventRepository {
  private readonly batches: AuditBatchInsert;

  /** `ownConnection`: on a SQLite file, batches are staged on a connection of their own (the fast path). */
  constructor(
    private readonly db: Db,
    ownConnection = true,
  ) {
    this.batches = isPostgres(db) ? postgresBatches(db) : sqliteAuditBatches(db, ownConnection);
  }

  /** Which connection audit batches are written on. */
  get writePath(): AuditBatchInsert["path"] {
    return this.batches.path;
  }

  async insertMany(events: readonly AuditEvent[]): Promise<void> {
    if (events.length === 0) return;
    await this.batches.insert(JSON.stringify(events.map(toValues)));
  }

  /** Closes the connection the batches are written on, where they have one of their own. */
  close(): Promise<void> {
    return this.batches.close();
  }

  async list(filter: AuditEventFilter, limit: number): Promise<StoredAuditEvent[]> {
    const q = this.db<AuditEventRow>("audit_events").select("*");
    if (filter.userName !== undefined) q.where("user_name", filter.userName);
    if (filter.clientId !== undefined) q.where("client_id", filter.clientId);
    if (filter.event !== undefined) q.where("event", filter.event);
    if (filter.since !== undefined) q.where("time", ">=", filter.since);
    if (filter.before !== undefined) q.where("id", "<", Number(filter.before));
    const rows = await q.orderBy("id", "desc").limit(limit);
    return rows.map(fromRow);
  }
}

/** How many of the oldest events one sweep statement looks at. */
const OLDEST_LOOKED_AT = 10_000;

/**
 * The cleanup sweep of events older than `retentionMs`. Ids follow time, so
 * the events past it are the first ids: each statement looks at the oldest
 * few thousand by the primary key, with no index on time to keep up.
 */
export function auditEventSweep(retentionMs: number): Sweep {
  return {
    table: "audit_events",
    key: "id",
    expired: (rows, now, db) =>
      rows
        .whereIn("t.id", db.select("id").from(db("audit_events").select("id").orderBy("id").limit(OLDEST_LOOKED_AT).as("oldest")))
        .where("t.time", "<", now - retentionMs),
  };
}

export interface AuditWriterOptions {
  /** Longest an event waits for the events after it before its batch is written. */
  flushAfterMs: number;
  /** Events that are written at once without waiting. */
  batchSize: number;
  /** Events kept while the database cannot take them; past it the oldest go (and are counted in the log). */
  maxPending: number;
}

export const AUDIT_WRITER_DEFAULTS: AuditWriterOptions = { flushAfterMs: 200, batchSize: 500, maxPending: 100_000 };

/** After the database refused a batch, the next try. */
const RETRY_AFTER_MS = 1000;

/**
 * Writes audit events off the request's path: `append` only queues, and the
 * queue is written one batch at a time, when it holds `batchSize` events
 * or `flushAfterMs` after its first. Unlike GroupCommit (groupCommit.ts),
 * nobody waits for the commit, so events can wait a little for others and
 * share a write; under load that is one write for hundreds of requests
 * instead of one per turn of the event loop, beside the token writes.
 *
 * `close` writes what is queued: nothing is lost on a clean shutdown. A kill
 * loses at most the last `flushAfterMs`; the log line of each event is
 * written at once (src/domain/auditTrail.ts), so it still tells.
 */
export class AuditEventWriter {
  private queue: AuditEvent[] = [];
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> | undefined;
  /** Whether the last write was refused: the queue then waits for the retry. */
  private refused = false;

  constructor(
    private readonly repo: Pick<AuditEventRepository, "insertMany">,
    private readonly logger: Logger,
    private readonly options: AuditWriterOptions = AUDIT_WRITER_DEFAULTS,
  ) {}

  append(event: AuditEvent): void {
    this.queue.push(event);
    if (this.queue.length >= this.options.batchSize) this.write();
    else this.schedule(this.options.flushAfterMs);
  }

  /** Write every queued event now; rejects if the database refused some (they stay queued). */
  async flush(): Promise<void> {
    // A write under way may have started before the last events arrived: wait for it, then write those.
    while (this.writing || this.queue.length > 0) {
      this.write();
      await this.writing;
      if (this.queue.length > 0 && this.refused) throw new Error(`${this.queue.length} audit events not written: the database refused them`);
    }
  }

  private schedule(afterMs: number): void {
    // Unreferenced: pending events never keep a finished process alive; close() writes them.
    this.timer ??= setTimeout(() => this.write(), afterMs).unref();
  }

  private write(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.writing || this.queue.length === 0) return;
    this.writing = this.drain().finally(() => {
      this.writing = undefined;
      if (this.queue.length === 0) return;
      // A full batch that arrived during the write goes at once; fewer wait for their window, or the retry.
      if (!this.refused && this.queue.length >= this.options.batchSize) this.write();
      else this.schedule(this.refused ? RETRY_AFTER_MS : this.options.flushAfterMs);
    });
  }

  private async drain(): Promise<void> {
    const batch = this.queue;
    this.queue = [];
    try {
      await this.repo.insertMany(batch);
      this.refused = false;
    } catch (err) {
      // Kept, in order, for the next try: the database may be back in a moment.
      this.queue = batch.concat(this.queue);
      this.refused = true;
      const dropped = this.queue.length - this.options.maxPending;
      if (dropped > 0) this.queue.splice(0, dropped);
      this.logger.error("audit events not written yet; retrying", {
        pending: this.queue.length,
        dropped: Math.max(0, dropped),
        error: err instanceof Error ? err.message : String(err),
      });
    }
  }
}
