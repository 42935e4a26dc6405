import type { Knex } from "knex";
import { isPostgres, type Db } from "./db.js";

/** One table of expiring rows: which of them may be deleted at a given time. */
export interface Sweep {
  table: string;
  /** Primary key column, used to delete exactly the rows picked. */
  key: string;
  /**
   * Narrow `rows` (the table aliased as `t`) to rows that may go at `now`,
   * epoch ms. Rows needed after their own expiry (for reuse detection, say)
   * stay out of it until they are not.
   */
  expired(rows: Knex.QueryBuilder, now: number, db: Db): Knex.QueryBuilder;
}

const DAY_MS = 24 * 3600 * 1000;
const CODE_REPLAY_MEMORY_MS = DAY_MS;
// Longer than any sensible --login-lockout-seconds, the window failures are counted in.
const LOGIN_WINDOW_MEMORY_MS = DAY_MS;

/** Every sweep the cleanup job runs. A new expiring table adds one entry here. */
export const SWEEPS: readonly Sweep[] = [
  // An expired access token is inactive whether its row exists or not.
  { table: "access_tokens", key: "token_hash", expired: (rows, now) => rows.where("t.expires_at", "<=", now) },
  // A consumed refresh token must outlive its own expiry while anything of its
  // family is alive: presenting it again is reuse, and revokes the family's
  // live tokens, refresh and access alike (an access token can outlive every
  // refresh token when expireInHours > refreshExpireInHours). The family goes
  // as a whole once its last token of either kind has expired.
  {
    table: "refresh_tokens",
    key: "token_hash",
    expired: (rows, now, db) => {
      const liveInFamily = (table: string) =>
        db(`${table} as live`).select(db.raw("1")).where("live.family_id", db.ref("t.family_id")).where("live.expires_at", ">", now);
      return rows.where("t.expires_at", "<=", now).whereNotExists(liveInFamily("refresh_tokens")).whereNotExists(liveInFamily("access_tokens"));
    },
  },
  { table: "sessions", key: "id_hash", expired: (rows, now) => rows.where("t.expires_at", "<=", now) },
  // Which clients a session had matters while it lives (back-channel logout); its rows expire with it.
  { table: "session_clients", key: "key", expired: (rows, now) => rows.where("t.expires_at", "<=", now) },
  // Codes stay a day past expiry, so a late replay is still recognised and revokes what the code minted.
  { table: "authorization_codes", key: "code_hash", expired: (rows, now) => rows.where("t.expires_at", "<=", now - CODE_REPLAY_MEMORY_MS) },
  { table: "authorization_requests", key: "id", expired: (rows, now) => rows.where("t.expires_at", "<=", now) },
  // A failure window that has ended and holds no lock-out counts for nothing.
  {
    table: "login_failures",
    key: "key",
    expired: (rows, now) => rows.where("t.locked_until", "<=", now).where("t.window_started_at", "<=", now - LOGIN_WINDOW_MEMORY_MS),
  },
  { table: "federation_states", key: "state_hash", expired: (rows, now) => rows.where("t.expires_at", "<=", now) },
  { table: "webauthn_challenges", key: "challenge", expired: (rows, now) => rows.where("t.expires_at", "<=", now) },
  // A mailed link past its expiry says only "expired"; after a day, "unknown" says enough.
  { table: "email_links", key: "token_hash", expired: (rows, now) => rows.where("t.expires_at", "<=", now - DAY_MS) },
  // Budgets are hourly; a window that began a day ago counts for nothing.
  { table: "action_limits", key: "key", expired: (rows, now) => rows.where("t.window_started_at", "<=", now - DAY_MS) },
  // A jti is needed only while its assertion could still be accepted (singleUseKeys.ts).
  { table: "client_assertion_jtis", key: "key", expired: (rows, now) => rows.where("t.expires_at", "<=", now) },
  // A pushed request that outlived its expires_in can no longer be used (RFC 9126 §2.2).
  { table: "pushed_authorization_requests", key: "request_uri_hash", expired: (rows, now) => rows.where("t.expires_at", "<=", now) },
  // A proof's jti is needed only while the proof's iat is fresh (singleUseKeys.ts).
  { table: "dpop_proof_jtis", key: "key", expired: (rows, now) => rows.where("t.expires_at", "<=", now) },
  // A request object's jti is needed only while the object could still be accepted (oauth/requestObject.ts).
  { table: "request_object_jtis", key: "key", expired: (rows, now) => rows.where("t.expires_at", "<=", now) },
  // An expired device code is kept a day, so a device still polling hears expired_token (RFC 8628 §3.5).
  { table: "device_codes", key: "device_code_hash", expired: (rows, now) => rows.where("t.expires_at", "<=", now - DAY_MS) },
];

export interface CleanupLimits {
  /** Rows per DELETE statement. */
  batchSize: number;
  /** Statements per table per run; a run deletes at most batchSize × maxBatches rows of each table. */
  maxBatches: number;
}

/**
 * Delete rows that may go at `now`, in bounded batches, and return how many
 * went per table. On PostgreSQL each batch locks its rows with SKIP LOCKED,
 * so instances running at the same moment take disjoint batches instead of
 * waiting on each other; SQLite has a single writer anyway.
 */
export async function deleteExpired(
  db: Db,
  now: number,
  limits: CleanupLimits,
  sweeps: readonly Sweep[] = SWEEPS,
): Promise<Record<string, number>> {
  const deleted: Record<string, number> = {};
  for (const sweep of sweeps) {
    deleted[sweep.table] = 0;
    for (let batch = 0; batch < limits.maxBatches; batch++) {
      let picked = sweep.expired(db(`${sweep.table} as t`).select(`t.${sweep.key}`), now, db).limit(limits.batchSize);
      if (isPostgres(db)) picked = picked.forUpdate().skipLocked();
      const count = await db(sweep.table).whereIn(sweep.key, picked).delete();
      deleted[sweep.table] += count;
      if (count < limits.batchSize) break;
    }
  }
  return deleted;
}
