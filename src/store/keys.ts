import { withDbLock, type Db } from "./db.js";
import type { SigningKeyRecord } from "../shared/model.js";


interface Row {
  kid: string;
  alg: string;
  private_jwk: string;
  public_jwk: string;
  created_at: number;
  active_from: number;
  retired_at: number | null;
}

const fromRow = (r: Row): SigningKeyRecord => ({
  kid: r.kid,
  alg: r.alg,
  privateJwk: r.private_jwk,
  publicJwk: r.public_jwk,
  createdAt: Number(r.created_at),
  activeFrom: Number(r.active_from),
  retiredAt: r.retired_at === null ? null : Number(r.retired_at),
});

/**
 * The contract (test/store/contract/tokens.spec.ts, every backend, "signing keys"):
 * - list() is newest first ("lists newest first, with retirement times as
 *   numbers or null");
 * - compare-and-set: retireIfUnused() is one conditional UPDATE, true for
 *   exactly one of any number of racing instances; holdUntil() only moves
 *   the bound later ("retires an unused key once, however many race to, and
 *   not before the latest bound holdUntil set");
 * - a key with a live token it signed is not retired: test/store/keys.spec.ts,
 *   on SQLite only;
 * - unique: the kid (primary key), not yet proven (kids are random).
 */
export class SigningKeyRepository {
  constructor(private readonly db: Db) {}

  /** Every key, newest first; of keys made in the same millisecond, the later-activating one. */
  async list(): Promise<SigningKeyRecord[]> {
    return (await this.db<Row>("signing_keys").orderBy("created_at", "desc").orderBy("active_from", "desc").orderBy("kid")).map(fromRow);
  }

  async insert(key: SigningKeyRecord): Promise<void> {
    await this.db("signing_keys").insert({
      kid: key.kid,
      alg: key.alg,
      private_jwk: key.privateJwk,
      public_jwk: key.publicJwk,
      created_at: key.createdAt,
      active_from: key.activeFrom,
      retired_at: key.retiredAt,
    });
  }

  /**
   * Insert the first key of its algorithm, unless a published key of that
   * algorithm exists. One statement that checks and inserts, so two
   * connections to one SQLite file agree; instances sharing a PostgreSQL
   * database also take an advisory lock per algorithm, since there a
   * statement does not see another's uncommitted insert.
   */
  async insertFirstOf(key: SigningKeyRecord): Promise<void> {
    await withDbLock(this.db, `signing-key-${key.alg}`, async () => {
      await this.db.raw(
        `insert into signing_keys (kid, alg, private_jwk, public_jwk, created_at, active_from, retired_at)
         select cast(? as text), cast(? as text), cast(? as text), cast(? as text), cast(? as bigint), cast(? as bigint), null
         where not exists (select 1 from signing_keys where alg = ? and retired_at is null)`,
        [key.kid, key.alg, key.privateJwk, key.publicJwk, key.createdAt, key.activeFrom, key.alg],
      );
    });
  }

  /**
   * Keep a key published until at least `until`: the expiry of a token it
   * signed that has no access-token row (an ID token issued on its own).
   * Conditional, so only a later bound writes.
   */
  async holdUntil(kid: string, until: number): Promise<void> {
    await this.db("signing_keys")
      .where({ kid })
      .where((q) => q.whereNull("held_until").orWhere("held_until", "<", until))
      .update({ held_until: until });
  }

  /**
   * Retire a key once no token it signed is still unexpired, in one
   * conditional UPDATE, so instances racing to retire it agree. Tokens from
   * before keys were recorded (kid null) hold back every retirement until
   * they expire, since their key is unknown. An ID token minted beside an
   * access token expires with it, so the access tokens stand for both; one
   * issued on its own is covered by holdUntil().
   */
  async retireIfUnused(kid: string, now: number): Promise<boolean> {
    const liveTokens = this.db("access_tokens")
      .select(this.db.raw("1"))
      .where((q) => q.where("kid", kid).orWhereNull("kid"))
      .where("expires_at", ">", now);
    const updated = await this.db("signing_keys")
      .where({ kid })
      .whereNull("retired_at")
      .where((q) => q.whereNull("held_until").orWhere("held_until", "<=", now))
      .whereNotExists(liveTokens)
      .update({ retired_at: now });
    return updated > 0;
  }
}
