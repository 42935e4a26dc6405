import { isPostgres, lockForTransaction, type Db } from "./db.js";

/** A pushed authorization request (RFC 9126 §2), waiting for the authorize request that names it. */
export interface PushedAuthorizationRequestRecord {
  /** SHA-256 of the request_uri: the value itself is never stored. */
  requestUriHash: string;
  /** The client that pushed it; only that client may use it. */
  clientId: string;
  /** Every authorize parameter, as JSON: new parameters flow through unchanged. */
  params: string;
  /** Epoch ms. */
  expiresAt: number;
}

/**
 * The contract (test/store/contract/authorization.spec.ts "pushed authorization requests", every backend):
 * - single use: take() deletes the row in one conditional statement and
 *   returns its parameters, so of any number of concurrent callers (on any
 *   instance) exactly one gets them ("lets exactly one of 50 concurrent takes win");
 * - bound: take() by another client_id, or after expiresAt, returns
 *   undefined and leaves the row ("refuses another client and an expired row");
 * - capped: insert() stores a row only while its client has fewer than
 *   `maxLive` live (unexpired, untaken) rows, decided atomically, so of any
 *   number of concurrent pushes (on any instance) at most `maxLive` are
 *   stored ("stores exactly the cap of 25 concurrent pushes of one client");
 * - expired rows are swept by the cleanup job ("cleanup of expired rows").
 */
export class PushedAuthorizationRequestRepository {
  constructor(private readonly db: Db) {}

  /** Store `r` unless its client already has `maxLive` live rows at `now`; true when stored. */
  async insert(r: PushedAuthorizationRequestRecord, maxLive: number, now: number): Promise<boolean> {
    const conditional = (db: Db) =>
      db.raw(
        `insert into pushed_authorization_requests (request_uri_hash, client_id, params, expires_at)
         select cast(? as text), cast(? as text), cast(? as text), cast(? as bigint)
         where (select count(*) from pushed_authorization_requests where client_id = ? and expires_at > ?) < ?
         returning request_uri_hash`,
        [r.requestUriHash, r.clientId, r.params, r.expiresAt, r.clientId, now, maxLive],
      );
    // SQLite: one statement holds the write lock from its count to its insert, on every connection to the file.
    if (!isPostgres(this.db)) return ((await conditional(this.db)) as unknown[]).length === 1;
    // PostgreSQL: a statement does not see another's uncommitted insert, so the pushes of one client take
    // turns under a transaction's advisory lock; each count then sees every row committed before it.
    return this.db.transaction(async (trx) => {
      await lockForTransaction(trx, `pushed-requests/${r.clientId}`);
      return ((await conditional(trx)) as { rows: unknown[] }).rows.length === 1;
    });
  }

  /** Delete the live row of `clientId` with this hash and return its parameters; undefined for every other caller. */
  async take(requestUriHash: string, clientId: string, now: number): Promise<string | undefined> {
    const live = () => this.db("pushed_authorization_requests").where({ request_uri_hash: requestUriHash, client_id: clientId }).andWhere("expires_at", ">", now);
    // A row is never changed, so the parameters read first are the deleted row's; the DELETE alone decides who wins.
    const row: { params: string } | undefined = await live().first("params");
    if (!row) return undefined;
    return (await live().delete()) === 1 ? row.params : undefined;
  }
}
