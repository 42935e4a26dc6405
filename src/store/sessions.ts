import type { Db } from "./db.js";
import { endSessions, type SessionEndReason } from "./backchannelLogouts.js";

export interface SessionRecord {
  idHash: string;
  /**
   * The session's id as ID tokens carry it (`sid`, OIDC Back-Channel Logout
   * 1.0 §2.1): random, never the cookie's hash, and kept when the same user
   * signs in again in the same browser.
   */
  sid: string;
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

const sessionRow = (s: SessionRecord) => ({
  id_hash: s.idHash,
  sid: s.sid,
  user_id: s.userId,
  auth_time: s.authTime,
  created_at: s.createdAt,
  expires_at: s.expiresAt,
  amr: s.amr ?? null,
  factor_id: s.factorId ?? null,
});

/** A sessions row as the domain sees it. */
export function sessionFromRow(r: Record<string, unknown>): SessionRecord {
  return {
    idHash: r.id_hash as string,
    sid: (r.sid as string | null) ?? "",
    userId: r.user_id as string,
    authTime: Number(r.auth_time),
    createdAt: Number(r.created_at),
    expiresAt: Number(r.expires_at),
    ...(r.amr ? { amr: r.amr as string } : {}),
    ...(r.factor_id ? { factorId: r.factor_id as string } : {}),
  };
}

/**
 * The contract (test/store/contract/sessions.spec.ts, every backend, "sessions"):
 * - undefined: findByHash of an unknown or ended hash ("round-trips by hash and ends");
 * - end of a missing row is no error and says false;
 * - end and replace: ending queues the back-channel logouts of the session's
 *   clients in the same transaction; replace keeps the sid and its clients
 *   and queues none (test/store/contract/backchannelLogouts.spec.ts);
 * - expired sessions are swept ("cleanup of expired rows" › "deletes expired
 *   access tokens, sessions and federation states, and keeps live ones").
 */
export class SessionRepository {
  constructor(private readonly db: Db) {}

  async insert(s: SessionRecord): Promise<void> {
    await this.db("sessions").insert(sessionRow(s));
  }

  async findByHash(idHash: string): Promise<SessionRecord | undefined> {
    const r = await this.db("sessions").where({ id_hash: idHash }).first();
    return r ? sessionFromRow(r) : undefined;
  }

  /** Ends one session, its clients' logouts queued with it (backchannelLogouts.ts); false when there was none. */
  async end(idHash: string, reason: SessionEndReason, at: number): Promise<boolean> {
    return (await this.db.transaction((trx) => endSessions(trx, (rows) => rows.where({ id_hash: idHash }), reason, at))) > 0;
  }

  /** Ends every session of a user but `keepHash`'s, their clients' logouts queued with them; how many ended. */
  async endAllOf(userId: string, reason: SessionEndReason, at: number, keepHash?: string): Promise<number> {
    return this.db.transaction((trx) =>
      endSessions(trx, (rows) => (keepHash ? rows.where({ user_id: userId }).whereNot({ id_hash: keepHash }) : rows.where({ user_id: userId })), reason, at),
    );
  }

  /**
   * The same session under a new cookie (a sign-in again by the same user):
   * the old row goes and the new one, with the same sid, comes in one
   * transaction. Its clients stay its clients and hear nothing.
   */
  async replace(previousHash: string, next: SessionRecord): Promise<void> {
    await this.db.transaction(async (trx) => {
      await trx("sessions").where({ id_hash: previousHash }).delete();
      await trx("sessions").insert(sessionRow(next));
    });
  }

  /** Records that `clientId` was issued a code or token from session `sid`; once per pair. */
  async addClient(sid: string, clientId: string, expiresAt: number): Promise<void> {
    await this.db("session_clients").insert({ key: `${sid} ${clientId}`, sid, client_id: clientId, expires_at: expiresAt }).onConflict("key").ignore();
  }

  /** The clients issued a code or token from session `sid`. */
  async clientsOf(sid: string): Promise<string[]> {
    return (await this.db("session_clients").where({ sid }).orderBy("client_id").select("client_id")).map((r) => r.client_id as string);
  }
}
