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
  /** The user a sign-in step has identified, while a second factor is still to come. */
  userId?: string;
  /** What the steps so far proved (RFC 8176 values, space-separated). */
  amr?: string;
  /** The second factor a step used. */
  factorId?: string;
}

/** What a sign-in step records on its pending request. */
export interface SignInStep {
  userId: string;
  amr: string;
  factorId?: string;
}

/**
 * The contract (test/store/contract/authorization.spec.ts, every backend, "authorization requests"):
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
      ...(r.user_id ? { userId: r.user_id as string } : {}),
      ...(r.amr ? { amr: r.amr as string } : {}),
      ...(r.factor_id ? { factorId: r.factor_id as string } : {}),
    };
  }

  /**
   * Record a sign-in step on the request: true unless it is gone, or a step
   * before named another user (one pending request signs one user in).
   */
  async recordStep(id: string, step: SignInStep): Promise<boolean> {
    const updated = await this.db("authorization_requests")
      .where({ id })
      .andWhere((q) => q.whereNull("user_id").orWhere("user_id", step.userId))
      .update({ user_id: step.userId, amr: step.amr, factor_id: step.factorId ?? null });
    return updated === 1;
  }

  /** Delete the request; true for exactly one caller, so it completes once. */
  async take(id: string): Promise<boolean> {
    return (await this.db("authorization_requests").where({ id }).delete()) === 1;
  }
}
