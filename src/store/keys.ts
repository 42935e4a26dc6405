import type { Db } from "./db.js";

export interface SigningKeyRecord {
  kid: string;
  alg: string;
  privateJwk: string;
  publicJwk: string;
  createdAt: number;
  activeFrom: number;
  retiredAt: number | null;
}

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
   * Retire a key once no access token it signed is still unexpired, in one
   * conditional UPDATE, so instances racing to retire it agree. Tokens from
   * before keys were recorded (kid null) hold back every retirement until
   * they expire, since their key is unknown. ID tokens expire with the
   * access token minted beside them, so the access tokens stand for both.
   */
  async retireIfUnused(kid: string, now: number): Promise<boolean> {
    const liveTokens = this.db("access_tokens")
      .select(this.db.raw("1"))
      .where((q) => q.where("kid", kid).orWhereNull("kid"))
      .where("expires_at", ">", now);
    const updated = await this.db("signing_keys").where({ kid }).whereNull("retired_at").whereNotExists(liveTokens).update({ retired_at: now });
    return updated > 0;
  }
}
