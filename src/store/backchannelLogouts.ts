import { randomUUID } from "node:crypto";
import type { Knex } from "knex";
import { isPostgres, type Db } from "./db.js";

/** Why a session ended: said in the audit trail beside each delivery. */
export type SessionEndReason = "sign_out" | "admin_revoked" | "user_disabled" | "user_deleted" | "password_changed" | "signed_in_again";

/** One logout token to deliver: to a client, about one session of one user. */
export interface LogoutDelivery {
  id: string;
  clientId: string;
  userId: string;
  sid: string;
  reason: SessionEndReason;
  /** Epoch ms the session ended. */
  createdAt: number;
  /** Attempts made before this one. */
  attempts: number;
}

// Bound on the values of one IN list (SQLite allows some thousands).
const CHUNK = 500;

/**
 * Deletes the sessions `which` picks from `trx("sessions")` and, in the
 * same transaction, queues one back-channel logout for each client that
 * was issued a code or token from one of them and has a
 * backchannelLogoutUri (OIDC Back-Channel Logout 1.0 §2.5): a session ends
 * and its clients are told, or neither. Returns how many sessions ended.
 */
export async function endSessions(trx: Db, which: (rows: Knex.QueryBuilder) => Knex.QueryBuilder, reason: SessionEndReason, at: number): Promise<number> {
  const ended = await deleteSessions(trx, which);
  const users = new Map(ended.filter((r) => r.sid).map((r) => [r.sid!, r.user_id]));
  const sids = [...users.keys()];
  for (let i = 0; i < sids.length; i += CHUNK) {
    const chunk = sids.slice(i, i + CHUNK);
    const targets: { sid: string; client_id: string }[] = await trx("session_clients as c")
      .join("applications as a", "a.client_id", "c.client_id")
      .whereIn("c.sid", chunk)
      .whereNot("a.backchannel_logout_uri", "")
      .select("c.sid", "c.client_id");
    if (targets.length > 0) {
      await trx("backchannel_logouts").insert(
        targets.map((t) => ({
          id: randomUUID(),
          client_id: t.client_id,
          user_id: users.get(t.sid)!,
          sid: t.sid,
          reason,
          created_at: at,
          next_attempt_at: at,
          attempts: 0,
          claimed_until: 0,
        })),
      );
    }
    await trx("session_clients").whereIn("sid", chunk).delete();
  }
  return ended.length;
}

/** Deletes the sessions picked and says which went: in one statement on PostgreSQL; SQLite has one writer, so a read first is as good. */
async function deleteSessions(trx: Db, which: (rows: Knex.QueryBuilder) => Knex.QueryBuilder): Promise<{ sid: string | null; user_id: string }[]> {
  if (isPostgres(trx)) return which(trx("sessions")).delete().returning(["sid", "user_id"]);
  const rows: { id_hash: string; sid: string | null; user_id: string }[] = await which(trx("sessions")).select("id_hash", "sid", "user_id");
  for (let i = 0; i < rows.length; i += CHUNK) {
    await trx("sessions").whereIn("id_hash", rows.slice(i, i + CHUNK).map((r) => r.id_hash)).delete();
  }
  return rows;
}

/**
 * The durable queue of back-channel logouts (oauth/backchannelLogout.ts
 * drains it). Rows are written by endSessions, in the transaction that ends
 * a session, so a restart loses none. Times are epoch ms.
 *
 * The contract (test/store/contract/backchannelLogouts.spec.ts, every backend):
 * - ending a session queues one row per client of that session with a
 *   backchannelLogoutUri, and none for other clients or sessions;
 * - claimDue hands each due row to one claimant until its lease ends: of
 *   concurrent claimants exactly one gets it; a row whose lease ran out
 *   (its claimant died) is due again;
 * - done and retryAt act only for the claimant holding the lease.
 */
export class BackchannelLogoutRepository {
  constructor(private readonly db: Db) {}

  /**
   * Up to `limit` rows due at `now` and not claimed, each claimed for
   * `claimant` until `leaseUntil` by one conditional UPDATE, so that of
   * several instances exactly one gets it.
   */
  async claimDue(now: number, leaseUntil: number, claimant: string, limit: number): Promise<LogoutDelivery[]> {
    const due = await this.db("backchannel_logouts")
      .where("next_attempt_at", "<=", now)
      .where("claimed_until", "<=", now)
      .orderBy("next_attempt_at")
      .limit(limit);
    const claimed: LogoutDelivery[] = [];
    for (const r of due) {
      const won = await this.db("backchannel_logouts")
        .where({ id: r.id })
        .where("claimed_until", "<=", now)
        .update({ claimed_until: leaseUntil, claimed_by: claimant });
      if (won === 1) {
        claimed.push({
          id: r.id,
          clientId: r.client_id,
          userId: r.user_id,
          sid: r.sid,
          reason: r.reason as SessionEndReason,
          createdAt: Number(r.created_at),
          attempts: Number(r.attempts),
        });
      }
    }
    return claimed;
  }

  /** The delivery is over (delivered, or given up): its row goes. */
  async done(id: string, claimant: string): Promise<void> {
    await this.db("backchannel_logouts").where({ id, claimed_by: claimant }).delete();
  }

  /** Try again at `at`: one more attempt counted, the claim released. `error` is our own wording, never the answer's body. */
  async retryAt(id: string, claimant: string, at: number, error: string): Promise<void> {
    await this.db("backchannel_logouts")
      .where({ id, claimed_by: claimant })
      .update({ next_attempt_at: at, attempts: this.db.raw("attempts + 1"), claimed_until: 0, claimed_by: null, last_error: error.slice(0, 500) });
  }

  /** How many deliveries wait (for tests and operators). */
  async pending(): Promise<number> {
    const [row] = await this.db("backchannel_logouts").count<{ n: number | string }[]>({ n: "*" });
    return Number(row?.n ?? 0);
  }
}
