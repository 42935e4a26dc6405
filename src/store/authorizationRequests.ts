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
