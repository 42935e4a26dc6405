import type { Db } from "./db.js";
import { guardUnique } from "./errors.js";
import { revokeClientTokens } from "./revocations.js";
import { rowBy, type RowReader } from "./rowReader.js";
import type { ApplicationRecord } from "../shared/model.js";

const BY_CLIENT_ID = rowBy("applications", "client_id");


interface Row {
  id: string;
  name: string;
  client_id: string;
  client_secret_hash: string;
  redirect_uris: string;
  grant_types: string;
  expire_in_hours: number;
  refresh_expire_in_hours: number;
  providers: string;
  created_at: number;
  updated_at: number;
}

const fromRow = (r: Row): ApplicationRecord => ({
  id: r.id,
  name: r.name,
  clientId: r.client_id,
  clientSecretHash: r.client_secret_hash,
  redirectUris: JSON.parse(r.redirect_uris),
  grantTypes: JSON.parse(r.grant_types),
  expireInHours: r.expire_in_hours,
  refreshExpireInHours: r.refresh_expire_in_hours,
  providers: JSON.parse(r.providers),
  createdAt: Number(r.created_at),
  updatedAt: Number(r.updated_at),
});

const toRow = (a: ApplicationRecord): Row => ({
  id: a.id,
  name: a.name,
  client_id: a.clientId,
  client_secret_hash: a.clientSecretHash,
  redirect_uris: JSON.stringify(a.redirectUris),
  grant_types: JSON.stringify(a.grantTypes),
  expire_in_hours: a.expireInHours,
  refresh_expire_in_hours: a.refreshExpireInHours,
  providers: JSON.stringify(a.providers),
  created_at: a.createdAt,
  updated_at: a.updatedAt,
});

/**
 * How long an application looked up by client id is reused. Every client
 * request starts with that lookup; a change made through this instance
 * clears the cache at once, one made through another instance is seen here
 * within this bound. Tokens are never cached: revocation stays immediate.
 */
export const APPLICATION_CACHE_MS = 1000;
const APPLICATION_CACHE_LIMIT = 1000;

/**
 * The contract (test/store/contract.spec.ts, every backend, "applications"):
 * - unique: name and client id; an insert or update that would repeat one
 *   throws ConflictError ("refuses a second application with the same name or client id");
 * - undefined: findByClientId and findByName of an unknown key; deleteByName
 *   says whether a row went ("round-trips every field and finds by client id
 *   and by name", "updates and deletes by name");
 * - findByClientId may answer from this instance's cache: its own writes are
 *   seen at once, another instance's within APPLICATION_CACHE_MS ("answers a
 *   lookup by client id with its own changes at once, and another instance's
 *   within the cache bound");
 * - no compare-and-set: update() is a plain write by id, the last one wins.
 */
export class ApplicationRepository {
  private readonly byClientId = new Map<string, { app: ApplicationRecord; until: number }>();

  constructor(
    private readonly db: Db,
    private readonly reads: RowReader,
  ) {}

  async findByClientId(clientId: string): Promise<ApplicationRecord | undefined> {
    const cached = this.byClientId.get(clientId);
    if (cached && cached.until > Date.now()) return cached.app;
    const row = await this.reads.first<Row>(BY_CLIENT_ID, clientId);
    if (!row) return undefined;
    const app = fromRow(row);
    if (this.byClientId.size >= APPLICATION_CACHE_LIMIT) this.byClientId.clear();
    this.byClientId.set(clientId, { app, until: Date.now() + APPLICATION_CACHE_MS });
    return app;
  }

  async findByName(name: string): Promise<ApplicationRecord | undefined> {
    const row = await this.db<Row>("applications").where({ name }).first();
    return row && fromRow(row);
  }

  async list(): Promise<ApplicationRecord[]> {
    return (await this.db<Row>("applications").orderBy("name")).map(fromRow);
  }

  async insert(app: ApplicationRecord): Promise<void> {
    await this.changing(() => guardUnique("application", "name or client id", () => this.db("applications").insert(toRow(app))));
  }

  async update(app: ApplicationRecord): Promise<void> {
    await this.changing(() =>
      guardUnique("application", "client id", () => this.db("applications").where({ id: app.id }).update(toRow(app))),
    );
  }

  /**
   * Returns whether a row was deleted. Every token issued to its client id is
   * revoked with it, at `at` (epoch ms), so an application created again
   * under that id inherits none; until then its tokens end because their
   * application is gone (tokens.ts).
   */
  async deleteByName(name: string, at = Date.now()): Promise<boolean> {
    return this.changing(() =>
      this.db.transaction(async (trx) => {
        const row = await trx<Row>("applications").where({ name }).first("client_id");
        if (!row) return false;
        await trx("applications").where({ name }).delete();
        await revokeClientTokens(trx, row.client_id, at);
        return true;
      }),
    );
  }

  /** A write, after which no lookup answers from before it. */
  private async changing<T>(write: () => Promise<T>): Promise<T> {
    try {
      return await write();
    } finally {
      this.byClientId.clear();
    }
  }
}
