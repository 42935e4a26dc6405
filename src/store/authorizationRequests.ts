import type { Db } from "./db.js";

/** A validated authorize request waiting for the user to sign in. */
export interface AuthorizationRequestRecord {
  id: string;
  /** SHA-256 of the CSRF token of the browser that started it. */
  csrfHash: string;
  /** The validated request, as JSON. */
  request: string;
  createdAt: number;
  expiresAt: number;
}

/**
 * The contract (test/store/contract.spec.ts, every backend, "authorization requests"):
 * - compare-and-set: take() deletes the row; exactly one of any number of
 *   concurrent callers gets true, so a request completes once ("round-trips
 *   by id, and lets exactly one of 50 concurrent takes of one request win");
 * - undefined: findById of an unknown or taken id (same test);
 * - expired rows go in the cleanup job's sweep, not yet proven here.
 */
export class AuthorizationRequestRepository {
  constructor(private readonly db: Db) {}

  async insert(r: AuthorizationRequestRecord): Promise<void> {
    await this.db("authorization_requests").insert({
      id: r.id,
      csrf_hash: r.csrfHash,
      request: r.request,
      created_at: r.createdAt,
      expires_at: r.expiresAt,
    });
  }

  async findById(id: string): Promise<AuthorizationRequestRecord | undefined> {
    const r = await this.db("authorization_requests").where({ id }).first();
    if (!r) return undefined;
    return {
      id: r.id,
      csrfHash: r.csrf_hash,
      request: r.request,
      createdAt: Number(r.created_at),
      expiresAt: Number(r.expires_at),
    };
  }

  /** Delete the request; true for exactly one caller, so it completes once. */
  async take(id: string): Promise<boolean> {
    return (await this.db("authorization_requests").where({ id }).delete()) === 1;
  }
}
