import type { Db } from "./db.js";
import { guardUnique } from "./errors.js";
import { revokeClientRefreshTokens, revokeClientTokens } from "./revocations.js";
import { rowBy, type RowReader } from "./rowReader.js";
import type { AccessTokenStrategy, ApplicationRecord, ClientRegistration, SigningAlg, TokenEndpointAuthMethod, TokenFormat } from "../shared/model.js";
import { changedColumns } from "./changedColumns.js";

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
  allowed_origins: string;
  token_format: string;
  signing_alg: string;
  access_token_strategy: string;
  public_client: boolean | number;
  mfa?: string;
  signup?: boolean | number;
  consent_required: boolean | number;
  registration: string | null;
  token_endpoint_auth_method: string;
  jwks: string;
  jwks_uri: string;
  client_secret_sealed: string;
  exchange_audiences: string;
  allow_impersonation: boolean | number;
  require_pushed_authorization_requests: boolean | number;
  dpop_bound_access_tokens?: boolean | number;
  backchannel_logout_uri: string;
  backchannel_logout_session_required: boolean | number;
  allow_private_backchannel_logout_uri: boolean | number;
  profile?: string;
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
  allowedOrigins: JSON.parse(r.allowed_origins),
  tokenFormat: r.token_format as TokenFormat,
  signingAlg: r.signing_alg as SigningAlg,
  accessTokenStrategy: r.access_token_strategy as AccessTokenStrategy,
  publicClient: Boolean(r.public_client),
  mfa: r.mfa === "required" ? "required" : "optional",
  // Only when set, like an optional field left out.
  ...(r.signup ? { signup: true } : {}),
  consentRequired: Boolean(r.consent_required),
  ...(r.registration ? { registration: JSON.parse(r.registration) as ClientRegistration } : {}),
  // "" in rows written before the column: the secret, as then.
  tokenEndpointAuthMethod: (r.token_endpoint_auth_method || (r.public_client ? "none" : "client_secret_basic")) as TokenEndpointAuthMethod,
  jwks: r.jwks ?? "",
  jwksUri: r.jwks_uri ?? "",
  clientSecretSealed: r.client_secret_sealed ?? "",
  exchangeAudiences: JSON.parse(r.exchange_audiences ?? "[]"),
  allowImpersonation: Boolean(r.allow_impersonation),
  requirePushedAuthorizationRequests: Boolean(r.require_pushed_authorization_requests),
  ...(r.dpop_bound_access_tokens ? { dpopBoundAccessTokens: true } : {}),
  backchannelLogoutUri: r.backchannel_logout_uri ?? "",
  backchannelLogoutSessionRequired: Boolean(r.backchannel_logout_session_required),
  allowPrivateBackchannelLogoutUri: Boolean(r.allow_private_backchannel_logout_uri),
  ...(r.profile === "fapi2" ? { profile: "fapi2" as const } : {}),
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
  allowed_origins: JSON.stringify(a.allowedOrigins),
  token_format: a.tokenFormat,
  signing_alg: a.signingAlg,
  access_token_strategy: a.accessTokenStrategy,
  public_client: a.publicClient,
  mfa: a.mfa ?? "optional",
  signup: a.signup ?? false,
  consent_required: a.consentRequired,
  registration: a.registration ? JSON.stringify(a.registration) : null,
  token_endpoint_auth_method: a.tokenEndpointAuthMethod,
  jwks: a.jwks,
  jwks_uri: a.jwksUri,
  client_secret_sealed: a.clientSecretSealed,
  exchange_audiences: JSON.stringify(a.exchangeAudiences),
  allow_impersonation: a.allowImpersonation,
  require_pushed_authorization_requests: a.requirePushedAuthorizationRequests ?? false,
  dpop_bound_access_tokens: a.dpopBoundAccessTokens ?? false,
  backchannel_logout_uri: a.backchannelLogoutUri,
  backchannel_logout_session_required: a.backchannelLogoutSessionRequired,
  allow_private_backchannel_logout_uri: a.allowPrivateBackchannelLogoutUri,
  profile: a.profile ?? "",
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
 * The contract (test/store/contract/applications.spec.ts, every backend, "applications"):
 * - unique: name and client id; an insert or update that would repeat one
 *   throws ConflictError ("refuses a second application with the same name or client id");
 * - undefined: findByClientId and findByName of an unknown key; deleteByName
 *   says whether a row went ("round-trips every field and finds by client id
 *   and by name", "updates and deletes by name");
 * - findByClientId may answer from this instance's cache: its own writes are
 *   seen at once, another instance's within APPLICATION_CACHE_MS ("answers a
 *   lookup by client id with its own changes at once, and another instance's
 *   within the cache bound");
 * - allowedOrigins answers from the same kind of cache: the set of every
 *   origin some application lists, its own writes seen at once, another
 *   instance's within APPLICATION_CACHE_MS ("collects every application's
 *   allowed origins, its own changes at once and another instance's within
 *   the cache bound");
 * - an update that turns an application public revokes its refresh tokens
 *   in the same transaction, and no other client's ("revokes the refresh
 *   tokens of an application that turns public, ...");
 * - no compare-and-set: update() is a plain write by id, the last one wins.
 */
export class ApplicationRepository {
  private readonly byClientId = new Map<string, { app: ApplicationRecord; until: number }>();
  private origins?: { set: ReadonlySet<string>; until: number };
  private originsLoad?: Promise<ReadonlySet<string>>;
  /** Counts writes, so a read that began before one does not refill the cache. */
  private writes = 0;

  constructor(
    private readonly db: Db,
    private readonly reads: RowReader,
  ) {}

  /** `fromDatabase`: read the row whatever the cache holds (and cache it again). */
  async findByClientId(clientId: string, fromDatabase = false): Promise<ApplicationRecord | undefined> {
    const cached = fromDatabase ? undefined : this.cachedByClientId(clientId);
    if (cached) return cached;
    const row = await this.reads.first<Row>(BY_CLIENT_ID, clientId);
    if (!row) return undefined;
    const app = fromRow(row);
    if (this.byClientId.size >= APPLICATION_CACHE_LIMIT) this.byClientId.clear();
    this.byClientId.set(clientId, { app, until: Date.now() + APPLICATION_CACHE_MS });
    return app;
  }

  /** What findByClientId would answer now without a query: only ever a known client_id. */
  cachedByClientId(clientId: string): ApplicationRecord | undefined {
    const cached = this.byClientId.get(clientId);
    return cached && cached.until > Date.now() ? cached.app : undefined;
  }

  /**
   * Every origin some application lists in allowedOrigins (CORS). The set is
   * cached like findByClientId's answers and returned as is while fresh, so a
   * cross-origin request costs no query; one query reads it again after that.
   */
  allowedOrigins(): ReadonlySet<string> | Promise<ReadonlySet<string>> {
    const cached = this.origins;
    if (cached && cached.until > Date.now()) return cached.set;
    if (this.originsLoad) return this.originsLoad;
    const load = this.loadOrigins().finally(() => {
      if (this.originsLoad === load) this.originsLoad = undefined;
    });
    this.originsLoad = load;
    return load;
  }

  private async loadOrigins(): Promise<ReadonlySet<string>> {
    const writes = this.writes;
    const rows = await this.db<Row>("applications").whereNot("allowed_origins", "[]").select("allowed_origins");
    const set = new Set(rows.flatMap((r) => JSON.parse(r.allowed_origins) as string[]));
    if (writes === this.writes) this.origins = { set, until: Date.now() + APPLICATION_CACHE_MS };
    return set;
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

  /**
   * With `before`, the application as the caller read it, only the columns
   * that differ from it are written (and updated_at): a field another call
   * changed meanwhile (a rotated secret, redirect URIs) is not written back.
   * An application that turns public loses its refresh tokens in the same
   * transaction (revokeClientRefreshTokens).
   */
  async update(app: ApplicationRecord, before?: ApplicationRecord): Promise<void> {
    const row = before ? changedColumns(toRow(before), toRow(app)) : toRow(app);
    const turnsPublic = before !== undefined && !before.publicClient && app.publicClient;
    await this.changing(() =>
      guardUnique("application", "client id", async () => {
        if (!turnsPublic) return void (await this.db("applications").where({ id: app.id }).update(row));
        await this.db.transaction(async (trx) => {
          await trx("applications").where({ id: app.id }).update(row);
          await revokeClientRefreshTokens(trx, before.clientId, app.updatedAt);
        });
      }),
    );
  }

  /**
   * Replaces the secret alone (its hash, and its sealed form for
   * client_secret_jwt), so no other field is written back as it was read;
   * false when no application has the id.
   */
  async updateSecretHash(id: string, clientSecretHash: string, updatedAt: number, clientSecretSealed = ""): Promise<boolean> {
    return this.changing(
      async () =>
        (await this.db("applications").where({ id }).update({ client_secret_hash: clientSecretHash, client_secret_sealed: clientSecretSealed, updated_at: updatedAt })) > 0,
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

  /**
   * Told of every write through this instance, after its own caches are
   * cleared; the write returns once it settles. `serve --workers` tells the
   * sibling processes with it, so they forget() before the write answers.
   */
  onWrite?: () => Promise<void>;

  /** Drops every cached answer: the next lookups read the database. */
  forget(): void {
    this.byClientId.clear();
    this.writes++;
    this.origins = undefined;
    this.originsLoad = undefined;
  }

  /** A write, after which no lookup answers from before it. */
  private async changing<T>(write: () => Promise<T>): Promise<T> {
    try {
      return await write();
    } finally {
      this.forget();
      await this.onWrite?.();
    }
  }
}
