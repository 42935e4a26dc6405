import type { Db } from "./db.js";

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
 * The contract (test/store/contract/pushedAuthorizationRequests.spec.ts, every backend):
 * - single use: take() deletes the row in one conditional statement and
 *   returns its parameters, so of any number of concurrent callers (on any
 *   instance) exactly one gets them ("lets exactly one of 50 concurrent takes win");
 * - bound: take() by another client_id, or after expiresAt, returns
 *   undefined and leaves the row ("refuses another client and an expired row");
 * - expired rows are swept by the cleanup job ("cleanup of expired rows").
 */
export class PushedAuthorizationRequestRepository {
  constructor(private readonly db: Db) {}

  async insert(r: PushedAuthorizationRequestRecord): Promise<void> {
    await this.db("pushed_authorization_requests").insert({
      request_uri_hash: r.requestUriHash,
      client_id: r.clientId,
      params: r.params,
      expires_at: r.expiresAt,
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
