import type { Db } from "./db.js";
import { guardUnique } from "./errors.js";
import { changedColumns } from "./changedColumns.js";
import type { ProviderRecord, ProviderTokenAuthMethod, UserMapping } from "../shared/model.js";

/** The `options` column: what a provider sets beyond the spec's fields. */
interface Options {
  userMapping?: UserMapping;
  tokenAuthMethod?: ProviderTokenAuthMethod;
  pkce?: boolean;
  allowInsecureUrls?: boolean;
  emailsUrl?: string;
  issuer?: string;
  sharedCallback?: boolean;
}


interface Row {
  name: string;
  type: string;
  display_name: string;
  client_id: string;
  client_secret: string;
  auth_url: string;
  scope: string;
  token_url: string;
  user_info_url: string;
  favicon: string;
  trust_email: boolean | number;
  options: string;
  created_at: number;
  updated_at: number;
}

function optionsOf(r: Row): Options {
  try {
    const parsed: unknown = JSON.parse(r.options || "{}");
    return typeof parsed === "object" && parsed !== null ? (parsed as Options) : {};
  } catch {
    return {};
  }
}

const fromRow = (r: Row, o = optionsOf(r)): ProviderRecord => ({
  name: r.name,
  type: r.type,
  displayName: r.display_name,
  clientId: r.client_id,
  clientSecret: r.client_secret,
  authUrl: r.auth_url,
  scope: r.scope,
  tokenUrl: r.token_url,
  userInfoUrl: r.user_info_url,
  favicon: r.favicon,
  trustEmail: Boolean(r.trust_email),
  userMapping: { ...o.userMapping },
  tokenAuthMethod: o.tokenAuthMethod ?? "client_secret_basic",
  pkce: o.pkce ?? false,
  allowInsecureUrls: o.allowInsecureUrls ?? false,
  emailsUrl: o.emailsUrl ?? "",
  issuer: o.issuer ?? "",
  sharedCallback: o.sharedCallback ?? false,
  createdAt: Number(r.created_at),
  updatedAt: Number(r.updated_at),
});

const toRow = (p: ProviderRecord): Row => ({
  name: p.name,
  type: p.type,
  display_name: p.displayName,
  client_id: p.clientId,
  client_secret: p.clientSecret,
  auth_url: p.authUrl,
  scope: p.scope,
  token_url: p.tokenUrl,
  user_info_url: p.userInfoUrl,
  favicon: p.favicon,
  trust_email: p.trustEmail,
  options: JSON.stringify({
    userMapping: p.userMapping,
    tokenAuthMethod: p.tokenAuthMethod,
    pkce: p.pkce,
    allowInsecureUrls: p.allowInsecureUrls,
    emailsUrl: p.emailsUrl,
    issuer: p.issuer,
    sharedCallback: p.sharedCallback,
  } satisfies Options),
  created_at: p.createdAt,
  updated_at: p.updatedAt,
});

/**
 * The contract (test/store/contract/federation.spec.ts, every backend, "providers"):
 * - unique: the name; a second insert throws ConflictError ("refuses a
 *   second provider with the same name");
 * - undefined: findByName of an unknown or deleted name; deleteByName says
 *   whether a row went ("round-trips, updates and deletes");
 * - a deleted provider's links go with it ("federated identities" › "goes
 *   with its user or its provider");
 * - no compare-and-set: update() is a plain write by name, the last one wins.
 */
export class ProviderRepository {
  constructor(private readonly db: Db) {}

  async findByName(name: string): Promise<ProviderRecord | undefined> {
    const row = await this.db<Row>("providers").where({ name }).first();
    return row && fromRow(row);
  }

  async list(): Promise<ProviderRecord[]> {
    return (await this.db<Row>("providers").orderBy("name")).map((r) => fromRow(r));
  }

  async insert(p: ProviderRecord): Promise<void> {
    await guardUnique("provider", "name", () => this.db("providers").insert(toRow(p)));
  }

  /**
   * With `before`, the provider as the caller read it, only the columns that
   * differ from it are written (and updated_at): a field another call
   * changed meanwhile (trustEmail, the secret) is not written back.
   */
  async update(p: ProviderRecord, before?: ProviderRecord): Promise<void> {
    await this.db("providers").where({ name: p.name }).update(before ? changedColumns(toRow(before), toRow(p)) : toRow(p));
  }

  async deleteByName(name: string): Promise<boolean> {
    return (await this.db("providers").where({ name }).delete()) > 0;
  }
}
