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

  /** Every key, newest first. */
  async list(): Promise<SigningKeyRecord[]> {
    return (await this.db<Row>("signing_keys").orderBy("created_at", "desc").orderBy("kid")).map(fromRow);
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
}
