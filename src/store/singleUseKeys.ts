import type { Db } from "./db.js";
import { queryDeadlineMs } from "./deadlines.js";
import { GroupCommit } from "./groupCommit.js";

/** The tables of single-use keys: a key and the time its row may be taken over (epoch ms). */
export type SingleUseKeyTable = "client_assertion_jtis" | "dpop_proof_jtis" | "request_object_jtis";

interface Use {
  key: string;
  expiresAt: number;
  now: number;
  /** Set by the write that holds it: whether this use recorded the key. */
  accepted?: boolean;
}

// Two bound values a row: far under either database's limit per statement.
const KEYS_PER_WRITE = 200;

/**
 * Keys used once: the `jti` of every client assertion (RFC 7523 §3), of
 * every DPoP proof (RFC 9449 §11.1) and of every request object that
 * carries one (RFC 7519 §4.1.7) accepted, each kept until the token it came
 * from could no longer be accepted; the cleanup job removes the rows.
 *
 * With `grouped` (the fast path, IDENTITY_PLAIN_PATHS=jti-batch turns it
 * off), the uses that arrive while a write runs are recorded by the next
 * one, in one statement (groupCommit.ts): one commit for many requests, and
 * on SQLite the kept rows (sqliteChanges.ts) survive longer.
 *
 * The contract (test/store/contract/tokens.spec.ts "client assertion jtis",
 * test/store/contract/dpop.spec.ts "DPoP proof jtis",
 * test/store/contract/authorization.spec.ts "request object jtis", every backend):
 * - atomic: useOnce() records a key in one conditional statement, so of any
 *   number of concurrent callers (on any instance) exactly one gets true
 *   ("lets exactly one of 50 concurrent uses of one jti through"); within
 *   one grouped write, a key's first use is the one tried and the others
 *   are refused;
 * - a key whose row has expired may be used again ("takes a key again once its row has expired");
 * - expired rows are swept ("cleanup of expired rows").
 */
export class SingleUseKeyRepository {
  private readonly group?: GroupCommit<Use>;

  constructor(
    private readonly db: Db,
    private readonly table: SingleUseKeyTable,
    grouped = true,
  ) {
    if (grouped) this.group = new GroupCommit((uses) => this.record(uses), KEYS_PER_WRITE, queryDeadlineMs(db));
  }

  /** "grouped" (the fast path) or "one write each". */
  get path(): "grouped" | "one write each" {
    return this.group ? "grouped" : "one write each";
  }

  /**
   * Record `key` as used until `expiresAt` (epoch ms). True when this call
   * recorded it; false when a row for it is still live at `now`.
   */
  async useOnce(key: string, expiresAt: number, now: number): Promise<boolean> {
    const use: Use = { key, expiresAt, now };
    if (this.group) await this.group.add(use);
    else await this.record([use]);
    return use.accepted === true;
  }

  private async record(uses: Use[]): Promise<void> {
    const first = new Map<string, Use>();
    for (const use of uses) {
      if (first.has(use.key)) use.accepted = false;
      else first.set(use.key, use);
    }
    const tried = [...first.values()];
    // A row may be taken over once expired for every use in the write: the earliest `now` decides.
    const now = Math.min(...tried.map((u) => u.now));
    const rows: { key: string }[] = await this.db(this.table)
      .insert(tried.map((u) => ({ key: u.key, expires_at: u.expiresAt })))
      .onConflict("key")
      .merge(["expires_at"])
      .where(`${this.table}.expires_at`, "<=", now)
      .returning("key");
    const recorded = new Set(rows.map((r) => r.key));
    for (const use of tried) use.accepted = recorded.has(use.key);
  }
}
