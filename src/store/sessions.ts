import type { Db } from "./db.js";

export interface SessionRecord {
  idHash: string;
  userId: string;
  /** Epoch seconds of the sign-in. */
  authTime: number;
  createdAt: number;
  expiresAt: number;
  /** What the sign-in proved (RFC 8176 `amr` values, space-separated); absent for sessions from before they were kept. */
  amr?: string;
  /** The second factor the sign-in used, whose removal takes it back (oauth/factors/). */
  factorId?: string;
}

/**
 * The contract (test/store/contract/sessions.spec.ts, every backend, "sessions"):
 * - undefined: findByHash of an unknown or deleted hash ("round-trips by hash and deletes");
 * - deleteByHash of a missing row is no error, not yet proven;
 * - expired sessions are swept ("cleanup of expired rows" › "deletes expired
 *   access tokens, sessions and federation states, and keeps live ones").
 */
export class SessionRepository {
  constructor(private readonly db: Db) {}

  async insert(s: SessionRecord): Promise<void> {
    await this.db("sessions").insert({
      id_hash: s.idHash,
      user_id: s.userId,
      auth_time: s.authTime,
      created_at: s.createdAt,
      expires_at: s.expiresAt,
      amr: s.amr ?? null,
      factor_id: s.factorId ?? null,
    });
  }

  async findByHash(idHash: string): Promise<SessionRecord | undefined> {
    const r = await this.db("sessions").where({ id_hash: idHash }).first();
    if (!r) return undefined;
    return {
      idHash: r.id_hash,
      userId: r.user_id,
      authTime: Number(r.auth_time),
      createdAt: Number(r.created_at),
      expiresAt: Number(r.expires_at),
      ...(r.amr ? { amr: r.amr as string } : {}),
      ...(r.factor_id ? { factorId: r.factor_id as string } : {}),
    };
  }

  async deleteByHash(idHash: string): Promise<void> {
    await this.db("sessions").where({ id_hash: idHash }).delete();
  }
}
