import type { Db } from "./db.js";
import { guardUnique } from "./errors.js";
import type { ExternalIdType, FederatedIdentityRecord } from "../shared/model.js";



export interface ExternalKey {
  provider: string;
  externalIdType: ExternalIdType;
  externalId: string;
}

interface Row {
  provider: string;
  external_id_type: string;
  external_id: string;
  user_id: string;
  username: string;
  created_at: number;
  updated_at: number;
}

const fromRow = (r: Row): FederatedIdentityRecord => ({
  provider: r.provider,
  externalIdType: r.external_id_type as ExternalIdType,
  externalId: r.external_id,
  userId: r.user_id,
  username: r.username,
  createdAt: Number(r.created_at),
  updatedAt: Number(r.updated_at),
});

const keyColumns = (k: ExternalKey) => ({ provider: k.provider, external_id_type: k.externalIdType, external_id: k.externalId });

/**
 * Every method takes `conn` so linking can run inside one transaction.
 *
 * The contract (test/store/contract/federation.spec.ts, every backend, "federated identities"):
 * - unique: (provider, external id type, external id); a second link of one
 *   account throws ConflictError, and a `sub` never passes for a
 *   preferred_username ("round-trips, lists by user, updates the username,
 *   and refuses a second link of one account");
 * - undefined: find() of an unknown key (same test);
 * - a link goes with its user or its provider ("goes with its user or its provider");
 * - atomic with the caller: given `conn`, a rolled-back transaction leaves no
 *   row ("joins a caller's transaction: a rolled-back user and link leave no row");
 * - may re-run: the linking transaction is retried on a ConflictError
 *   (federation/linking.ts), which is why every write here takes `conn`.
 */
export class FederatedIdentityRepository {
  constructor(private readonly db: Db) {}

  async find(key: ExternalKey, conn: Db = this.db): Promise<FederatedIdentityRecord | undefined> {
    const row = await conn<Row>("federated_identities").where(keyColumns(key)).first();
    return row && fromRow(row);
  }

  async listByUser(userId: string, conn: Db = this.db): Promise<FederatedIdentityRecord[]> {
    return (await conn<Row>("federated_identities").where({ user_id: userId }).orderBy(["provider", "external_id_type", "external_id"])).map(fromRow);
  }

  async insert(link: FederatedIdentityRecord, conn: Db = this.db): Promise<void> {
    await guardUnique("federated identity", "provider and external id", () =>
      conn("federated_identities").insert({
        ...keyColumns(link),
        user_id: link.userId,
        username: link.username,
        created_at: link.createdAt,
        updated_at: link.updatedAt,
      }),
    );
  }

  async updateUsername(key: ExternalKey, username: string, at: number, conn: Db = this.db): Promise<void> {
    await conn("federated_identities").where(keyColumns(key)).update({ username, updated_at: at });
  }
}
