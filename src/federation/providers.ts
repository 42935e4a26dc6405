import { noAudit, recordAdminChange, type AuditEventName, type AuditTrail } from "../shared/audit.js";
import type { Clock } from "../shared/clock.js";
import {
  absoluteHttpUrlProblem,
  conflictsAsErrors,
  FieldChecks,
  InvalidInputError,
  optionalBoolean,
  optionalString,
  rejectUnknownFields,
} from "../accounts/validation.js";
import { echo, OAuthError } from "../oauth/errors.js";
import type { ProviderRepository } from "../store/providers.js";
import { effectiveProvider, isProviderType, PROVIDER_TYPES, providerTypeOf, type ProviderTypeName } from "./providerTypes/index.js";
import type { ProviderField } from "./providerTypes/providerType.js";
import { SecretBox, SecretBoxError } from "./secretBox.js";
import { insecureUrlProblem } from "./urlRule.js";
import { mappingPathProblem } from "./userMapping.js";
import {
  PROVIDER_TOKEN_AUTH_METHODS,
  USER_MAPPING_KEYS,
  type ProviderRecord,
  type ProviderTokenAuthMethod,
  type UserMapping,
} from "../shared/model.js";

export const PROVIDER_FIELDS = [
  "name", "type", "displayName", "clientId", "clientSecret", "authUrl", "scope", "tokenUrl", "userInfoUrl", "favicon", "trustEmail",
  "userMapping", "tokenAuthMethod", "pkce", "allowInsecureUrls", "emailsUrl", "issuer", "sharedCallback",
] as const;

/** The string fields: the spec's (each required for Custom; presets fill most in) and GitHub's emails URL. */
const STRING_FIELDS = ["clientId", "clientSecret", "authUrl", "scope", "tokenUrl", "userInfoUrl", "favicon", "emailsUrl", "issuer"] as const satisfies readonly ProviderField[];
type StringField = (typeof STRING_FIELDS)[number];
const URL_FIELDS: ReadonlySet<StringField> = new Set(["authUrl", "tokenUrl", "userInfoUrl", "favicon", "emailsUrl", "issuer"]);

/** The one problem a bad or missing type has: which types there are. */
const TYPE_PROBLEM = `must be ${Object.keys(PROVIDER_TYPES).map((name) => `"${name}"`).join(" or ")}`;

/** A provider as configured: its type says which string fields are required. */
export interface ProviderInput extends Partial<Record<StringField, string>> {
  name: string;
  type: ProviderTypeName;
  displayName?: string;
  trustEmail?: boolean;
  userMapping?: UserMapping;
  tokenAuthMethod?: ProviderTokenAuthMethod;
  pkce?: boolean;
  allowInsecureUrls?: boolean;
  sharedCallback?: boolean;
}

/** The fields of an update; absent ones keep their value. */
export type ProviderPatch = Partial<Omit<ProviderInput, "name">> & { name: string };

/** A provider's name is a path segment of the login page's button (/login/oauth/provider/<name>) and of its callback (/callback/<name>). */
export const isProviderName = (value: unknown): value is string => typeof value === "string" && /^[A-Za-z0-9_.-]{1,100}$/.test(value);

function providerName(value: unknown): string {
  if (!isProviderName(value)) {
    throw new InvalidInputError("name", "must be 1-100 letters, digits or _ . -");
  }
  return value;
}

/** Check the fields that are present, naming every bad one. */
export function parseProviderPatch(raw: Record<string, unknown>): ProviderPatch {
  const checks = new FieldChecks();
  const patch = patchOf(raw, checks);
  checks.done();
  return patch;
}

/** The fields that are present and good; `checks` notes the bad ones. */
function patchOf(raw: Record<string, unknown>, checks: FieldChecks): ProviderPatch {
  const check = <T>(run: () => T) => checks.check(run);
  check(() => rejectUnknownFields(raw, PROVIDER_FIELDS));
  const patch = { name: check(() => providerName(raw.name)) } as ProviderPatch;
  if (raw.type !== undefined) {
    patch.type = check(() => {
      if (!isProviderType(raw.type)) throw new InvalidInputError("type", TYPE_PROBLEM);
      return raw.type;
    });
  }
  patch.displayName = check(() => optionalString(raw.displayName, "displayName", 200));
  for (const field of STRING_FIELDS) {
    patch[field] = check(() => {
      const value = optionalString(raw[field], field, 2000);
      if (value === undefined) return undefined;
      if (value === "") throw new InvalidInputError(field, "is required");
      const problem = URL_FIELDS.has(field) ? absoluteHttpUrlProblem(value) : undefined;
      if (problem) throw new InvalidInputError(field, problem);
      return value;
    });
  }
  patch.trustEmail = check(() => optionalBoolean(raw.trustEmail, "trustEmail"));
  patch.userMapping = check(() => userMapping(raw.userMapping));
  if (raw.tokenAuthMethod !== undefined) {
    patch.tokenAuthMethod = check(() => {
      if (!PROVIDER_TOKEN_AUTH_METHODS.includes(raw.tokenAuthMethod as ProviderTokenAuthMethod)) {
        throw new InvalidInputError("tokenAuthMethod", `must be ${PROVIDER_TOKEN_AUTH_METHODS.map((m) => `"${m}"`).join(" or ")}`);
      }
      return raw.tokenAuthMethod as ProviderTokenAuthMethod;
    });
  }
  patch.pkce = check(() => optionalBoolean(raw.pkce, "pkce"));
  patch.allowInsecureUrls = check(() => optionalBoolean(raw.allowInsecureUrls, "allowInsecureUrls"));
  patch.sharedCallback = check(() => optionalBoolean(raw.sharedCallback, "sharedCallback"));
  return patch;
}

/** Casdoor's userMapping: an object of JSON paths by key; an empty value drops the key (back to the default). */
function userMapping(raw: unknown): UserMapping | undefined {
  if (raw === undefined) return undefined;
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) throw new InvalidInputError("userMapping", "must be an object of JSON paths");
  const checks = new FieldChecks();
  checks.check(() => rejectUnknownFields(raw as Record<string, unknown>, USER_MAPPING_KEYS.map(String)));
  const mapping: UserMapping = {};
  for (const key of USER_MAPPING_KEYS) {
    const path = checks.check(() => {
      const path = optionalString((raw as Record<string, unknown>)[key], `userMapping.${key}`, 200);
      const problem = path ? mappingPathProblem(path) : undefined;
      if (problem) throw new InvalidInputError(`userMapping.${key}`, problem);
      return path;
    });
    if (path) mapping[key] = path;
  }
  checks.done();
  return mapping;
}

/** Notes the fields the provider's type needs it to set (presets fill in the rest), unless already refused. */
function noteMissing(provider: { type: string } & Partial<Record<StringField, string>>, checks: FieldChecks): void {
  for (const field of providerTypeOf(provider.type)?.required ?? []) {
    if (!provider[field] && !checks.refused(field)) checks.refuse(field, `is required for type ${provider.type}`);
  }
}

/**
 * Every URL of a provider uses https, except on loopback hosts, unless the
 * provider allows insecure URLs: the token exchange carries the client secret
 * and the code, and the answers decide who signs in.
 */
export function checkProviderUrls(provider: Pick<ProviderRecord, "allowInsecureUrls"> & Partial<Record<StringField, string>>): void {
  const checks = new FieldChecks();
  noteInsecureUrls(provider, checks);
  checks.done();
}

function noteInsecureUrls(provider: Pick<ProviderRecord, "allowInsecureUrls"> & Partial<Record<StringField, string>>, checks: FieldChecks): void {
  for (const field of URL_FIELDS) {
    const value = provider[field];
    const problem = value && !checks.refused(field) ? insecureUrlProblem(value, provider.allowInsecureUrls) : undefined;
    if (problem) checks.refuse(field, problem);
  }
}

/** A whole record: safe URLs, and the fields its type requires; every bad field named. */
function checkRecord(record: ProviderRecord): void {
  const checks = new FieldChecks();
  noteInsecureUrls(record, checks);
  noteMissing(record, checks);
  checks.done();
}

/** Check a whole provider (config file, create), naming every bad field. */
export function parseProviderInput(raw: Record<string, unknown>): ProviderInput {
  const checks = new FieldChecks();
  const patch = patchOf(raw, checks);
  if (patch.type === undefined) {
    if (!checks.refused("type")) checks.refuse("type", TYPE_PROBLEM);
    checks.done();
  }
  // Checked again on the record at create; here too, so that one answer names these with the rest.
  noteInsecureUrls({ ...patch, allowInsecureUrls: patch.allowInsecureUrls ?? false }, checks);
  noteMissing({ ...patch, type: patch.type! }, checks);
  checks.done();
  return patch as ProviderInput;
}

/**
 * The secret is write-only: an update that keeps it must not send it
 * somewhere else (another token URL, or the token endpoint of another
 * issuer's discovery, or in clear over http), or whoever may edit the
 * provider could read it there. Such a change must bring the secret again.
 */
function checkSecretStays(before: ProviderRecord, after: ProviderRecord): void {
  const destination = (record: ProviderRecord) => {
    const effective = effectiveProvider(record);
    return `${effective.tokenUrl} ${record.type === "OIDC" ? record.issuer : ""}`;
  };
  if (destination(before) !== destination(after) || (after.allowInsecureUrls && !before.allowInsecureUrls)) {
    throw new InvalidInputError("clientSecret", "must be given again when the token URL, type or issuer changes, or plain http is allowed: it would be sent there");
  }
}

/** What seals a provider's secret: the provider's name, so a sealed value opens only in its own row. */
const secretContext = (name: string) => `provider/${name}`;

/**
 * Provider management shared by the config file, the CLI and
 * FederationService. The client secret is sealed by the SecretBox before it
 * is stored, and only `clientSecret()` opens it, for the token exchange.
 */
export class ProviderAdmin {
  constructor(
    private readonly repo: ProviderRepository,
    private readonly clock: Clock,
    private readonly box: SecretBox,
    private readonly audit: AuditTrail = noAudit,
  ) {}

  async create(input: ProviderInput): Promise<ProviderRecord> {
    const now = this.clock.now();
    const record: ProviderRecord = {
      name: input.name,
      type: input.type,
      displayName: input.displayName ?? "",
      clientId: input.clientId ?? "",
      clientSecret: this.box.seal(input.clientSecret ?? "", secretContext(input.name)),
      authUrl: input.authUrl ?? "",
      scope: input.scope ?? "",
      tokenUrl: input.tokenUrl ?? "",
      userInfoUrl: input.userInfoUrl ?? "",
      favicon: input.favicon ?? "",
      trustEmail: input.trustEmail ?? false,
      userMapping: input.userMapping ?? {},
      tokenAuthMethod: input.tokenAuthMethod ?? "client_secret_basic",
      pkce: input.pkce ?? false,
      allowInsecureUrls: input.allowInsecureUrls ?? false,
      emailsUrl: input.emailsUrl ?? "",
      issuer: input.issuer ?? "",
      sharedCallback: input.sharedCallback ?? false,
      createdAt: now,
      updatedAt: now,
    };
    checkRecord(record);
    await conflictsAsErrors(() => this.repo.insert(record));
    this.recordChange("provider_created", record.name, undefined, record);
    return record;
  }

  async update(patch: ProviderPatch): Promise<ProviderRecord> {
    const current = await this.get(patch.name);
    const defined = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined));
    const record: ProviderRecord = {
      ...current,
      ...defined,
      clientSecret: patch.clientSecret === undefined ? current.clientSecret : this.resealed(current, patch.clientSecret),
      updatedAt: this.clock.now(),
    };
    checkRecord(record);
    if (patch.clientSecret === undefined) checkSecretStays(current, record);
    // Only what this update changed is written: another update since our read keeps its fields.
    await this.repo.update(record, current);
    this.recordChange("provider_updated", record.name, current, record);
    return record;
  }

  /** Create or update by name: the config file, applied at every start. */
  async upsert(input: ProviderInput): Promise<ProviderRecord> {
    return (await this.repo.findByName(input.name)) ? this.update(input) : this.create(input);
  }

  async get(name: string): Promise<ProviderRecord> {
    const provider = await this.repo.findByName(name);
    if (!provider) throw new OAuthError("not_found", `no provider named ${echo(name)}`);
    return provider;
  }

  list(): Promise<ProviderRecord[]> {
    return this.repo.list();
  }

  async delete(name: string): Promise<void> {
    const current = await this.repo.findByName(name);
    if (!current || !(await this.repo.deleteByName(name))) throw new OAuthError("not_found", `no provider named ${echo(name)}`);
    this.recordChange("provider_deleted", name, current, undefined);
  }

  private recordChange(event: AuditEventName, name: string, before: ProviderRecord | undefined, after: ProviderRecord | undefined): void {
    // The provider's client_id is the upstream's, not one of our applications': it stays in the diff, out of the client filter.
    recordAdminChange(this.audit, event, { name }, before, after, ["clientSecret"]);
  }

  /** The client secret in clear, for the token exchange. Throws SecretBoxError when it cannot be opened. */
  clientSecret(provider: ProviderRecord): string {
    return this.box.open(provider.clientSecret, secretContext(provider.name));
  }

  isEncrypted(provider: ProviderRecord): boolean {
    return SecretBox.isSealed(provider.clientSecret);
  }

  /** Problems with the stored secrets an operator should hear about at start-up. */
  async secretWarnings(): Promise<string[]> {
    const providers = await this.repo.list();
    const warnings: string[] = [];
    if (!this.box.encrypting && providers.length > 0) {
      warnings.push("IDENTITY_SECRET_KEY is not set: provider client secrets are stored unencrypted");
    }
    for (const provider of providers) {
      try {
        this.clientSecret(provider);
      } catch (err) {
        if (!(err instanceof SecretBoxError)) throw err;
        warnings.push(`provider ${provider.name}: its client secret cannot be read (${err.message}); sign-in with it fails`);
        continue;
      }
      if (this.box.encrypting && !this.isEncrypted(provider)) {
        warnings.push(`provider ${provider.name}: its client secret was stored before IDENTITY_SECRET_KEY was set; update it to encrypt it`);
      }
    }
    return warnings;
  }

  // An unchanged secret (a config file applied again) keeps its stored form.
  private resealed(current: ProviderRecord, secret: string): string {
    try {
      if (this.clientSecret(current) === secret && this.isEncrypted(current) === this.box.encrypting) return current.clientSecret;
    } catch (err) {
      if (!(err instanceof SecretBoxError)) throw err;
    }
    return this.box.seal(secret, secretContext(current.name));
  }
}
