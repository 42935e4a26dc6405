import { randomUUID } from "node:crypto";
import { noAudit, recordAdminChange, type AuditEventName, type AuditTrail } from "../shared/audit.js";
import type { Clock } from "../shared/clock.js";
import { echo, OAuthError } from "../oauth/errors.js";
import { cleartextRedirectProblem } from "../oauth/redirectUris.js";
import { GRANT_TABLE, GRANT_TYPES, grantTypeNamed, SECRET_GRANT_TYPES } from "../oauth/grants/index.js";
import {
  hashGeneratedSecret,
  hashSecret,
  MIN_CHOSEN_SECRET_LENGTH,
  noSecretHash,
  randomToken,
  SCRYPT_COST,
  verifySecret,
  type ScryptCost,
} from "../oauth/secrets.js";
import { isProviderName } from "../federation/providers.js";
import { SecretBox } from "../federation/secretBox.js";
import { clientSecretSealContext } from "../oauth/clientAssertion.js";
import { optionalAuthMethod, optionalJwks, optionalJwksUri, resolveAuthMethod } from "./clientAuthMethod.js";
import { backchannelLogoutUriProblem, optionalBackchannelLogoutUri } from "./backchannelLogoutUri.js";
import { fapi2ApplicationProblems } from "../oauth/fapi2.js";
import type { ApplicationRepository } from "../store/applications.js";
import { CONSOLE_APP_NAME, isConsoleApplication } from "./consoleClient.js";
import {
  absoluteHttpUrlProblem,
  conflictsAsErrors,
  FieldChecks,
  InvalidInputError,
  optionalBoolean,
  optionalHours,
  optionalString,
  optionalStringList,
  originProblem,
  rejectUnknownFields,
  requireName,
} from "./validation.js";
import {
  ACCESS_TOKEN_STRATEGIES,
  APPLICATION_PROFILES,
  type ApplicationProfile,
  DEFAULT_ACCESS_TOKEN_STRATEGY,
  DEFAULT_SIGNING_ALG,
  DEFAULT_TOKEN_FORMAT,
  SIGNING_ALGS,
  TOKEN_FORMATS,
  MFA_POLICIES,
  type MfaPolicy,
  type AccessTokenStrategy,
  type ApplicationRecord,
  type SigningAlg,
  type TokenEndpointAuthMethod,
  type TokenFormat,
  TOKEN_ENDPOINT_AUTH_METHODS,
} from "../shared/model.js";

export { GRANT_TYPES } from "../oauth/grants/index.js";

export const APPLICATION_FIELDS = [
  "name", "clientId", "clientSecret", "redirectUris", "grantTypes", "expireInHours", "refreshExpireInHours", "providers",
  "allowedOrigins", "tokenFormat", "signingAlg", "accessTokenStrategy", "publicClient", "mfa", "signup",
  "tokenEndpointAuthMethod", "jwks", "jwksUri", "exchangeAudiences", "allowImpersonation", "consentRequired",
  "requirePushedAuthorizationRequests", "dpopBoundAccessTokens",
  "backchannelLogoutUri", "backchannelLogoutSessionRequired", "allowPrivateBackchannelLogoutUri", "profile",
] as const;

/** Writable application fields; absent ones keep their value (update) or default (create). */
export interface ApplicationInput {
  name: string;
  clientId?: string;
  clientSecret?: string;
  redirectUris?: string[];
  grantTypes?: string[];
  expireInHours?: number;
  refreshExpireInHours?: number;
  providers?: string[];
  /** Browser origins allowed to call the API across origins (CORS, src/http/cors.ts). */
  allowedOrigins?: string[];
  /** `JWT-Standard` (the default) or `JWT`, Casdoor's names (oauth/tokens.ts). */
  tokenFormat?: TokenFormat;
  /** RS256 (the default), PS256, ES256 or EdDSA: how its ID tokens and JWT access tokens are signed. */
  signingAlg?: SigningAlg;
  /** `jwt` (the default) or `opaque`: a random access token only introspection, userinfo and get-account read. */
  accessTokenStrategy?: AccessTokenStrategy;
  /** A public client (oauth/publicClients.ts): no secret; false (the default) for a confidential one. */
  publicClient?: boolean;
  /** `optional` (the default) or `required`: the second-factor policy (oauth/factors/signInPolicy.ts). */
  mfa?: MfaPolicy;
  /** Whether its login page offers "Create account" (accounts/signUp.ts); false by default. */
  signup?: boolean;
  /** client_secret_basic (the default), client_secret_post, client_secret_jwt, private_key_jwt or none (clientAuthMethod.ts). */
  tokenEndpointAuthMethod?: TokenEndpointAuthMethod;
  /** private_key_jwt: a JWK Set of public keys, as JSON text. */
  jwks?: string;
  /** private_key_jwt: the https URL of its JWK Set. */
  jwksUri?: string;
  /** Token exchange (RFC 8693): the client ids or resources it may exchange tokens for. */
  exchangeAudiences?: string[];
  /** Token exchange without an actor token (impersonation); false by default. */
  allowImpersonation?: boolean;
  /** Whether users must allow it on the consent page (issue 43 §2); false by default, always true for a registered client. */
  consentRequired?: boolean;
  /** RFC 9126 §5: refuse its authorize requests that do not come through PAR; false by default. */
  requirePushedAuthorizationRequests?: boolean;
  /** RFC 9449: refuse token requests without a DPoP proof; false by default. */
  dpopBoundAccessTokens?: boolean;
  /** Back-Channel Logout 1.0: where logout tokens are POSTed ("" for none, the default; backchannelLogoutUri.ts). */
  backchannelLogoutUri?: string;
  /** Its logout tokens must carry `sid` (they always do); false by default. */
  backchannelLogoutSessionRequired?: boolean;
  /** backchannelLogoutUri may target a private or link-local address; false by default. */
  allowPrivateBackchannelLogoutUri?: boolean;
  /** "" (none, the default) or `fapi2`: held to the FAPI 2.0 Security Profile (oauth/fapi2.ts). */
  profile?: ApplicationProfile;
}

/**
 * The values each choice field accepts, for administration tools
 * (ApplicationChoicesService, the console): derived from the tables that
 * validation reads, so a new grant or method appears without a copy to keep.
 */
export const APPLICATION_CHOICES = {
  grantTypes: GRANT_TABLE.map((g) => ({ grantType: g.grantType, shortName: g.shortName ?? "", alwaysOn: g.alwaysEnabled, needsSecret: g.needsSecret })),
  tokenEndpointAuthMethods: [...TOKEN_ENDPOINT_AUTH_METHODS],
  tokenFormats: [...TOKEN_FORMATS],
  signingAlgs: [...SIGNING_ALGS],
  accessTokenStrategies: [...ACCESS_TOKEN_STRATEGIES],
  mfaPolicies: [...MFA_POLICIES],
} as const;

/** Check untrusted input (a config entry, CLI flags, an RPC) field by field, naming every bad one. */
export function parseApplicationInput(raw: Record<string, unknown>): ApplicationInput {
  const checks = new FieldChecks();
  const check = <T>(run: () => T) => checks.check(run);
  check(() => rejectUnknownFields(raw, APPLICATION_FIELDS));
  const clientId = check(() => {
    const value = optionalString(raw.clientId, "clientId", 200);
    if (value !== undefined && !/^[\x21-\x7e]{1,200}$/.test(value)) {
      throw new InvalidInputError("clientId", "must be 1-200 printable ASCII characters without spaces");
    }
    return value;
  });
  const clientSecret = check(() => {
    const value = optionalString(raw.clientSecret, "clientSecret", 500);
    // A chosen secret is the only client credential an attacker can guess;
    // leaving it out has the service generate 256 random bits instead.
    if (value !== undefined && [...value].length < MIN_CHOSEN_SECRET_LENGTH) {
      throw new InvalidInputError("clientSecret", `must be at least ${MIN_CHOSEN_SECRET_LENGTH} characters (leave it out to have one generated)`);
    }
    return value;
  });
  const input = {
    name: check(() => requireName(raw.name)),
    clientId,
    clientSecret,
    redirectUris: check(() => optionalStringList(raw.redirectUris, "redirectUris", (uri) => absoluteHttpUrlProblem(uri) ?? cleartextRedirectProblem(uri))),
    grantTypes: check(() =>
      optionalStringList(raw.grantTypes, "grantTypes", (g) => (grantTypeNamed(g) ? undefined : `is not one of ${GRANT_TYPES.join(", ")}`))?.map((g) => grantTypeNamed(g)!),
    ),
    expireInHours: check(() => optionalHours(raw.expireInHours, "expireInHours")),
    refreshExpireInHours: check(() => optionalHours(raw.refreshExpireInHours, "refreshExpireInHours")),
    providers: check(() => optionalStringList(raw.providers, "providers", (p) => (isProviderName(p) ? undefined : "is not a provider name"))),
    // Cross-origin answers go to scripts on these origins only; like redirect
    // URIs, never over clear text beyond the machine itself.
    allowedOrigins: check(() => optionalStringList(raw.allowedOrigins, "allowedOrigins", (o) => originProblem(o) ?? cleartextRedirectProblem(o))),
    tokenFormat: check(() => optionalOneOf(raw.tokenFormat, "tokenFormat", TOKEN_FORMATS)),
    signingAlg: check(() => optionalOneOf(raw.signingAlg, "signingAlg", SIGNING_ALGS)),
    accessTokenStrategy: check(() => optionalOneOf(raw.accessTokenStrategy, "accessTokenStrategy", ACCESS_TOKEN_STRATEGIES)),
    publicClient: check(() => optionalBoolean(raw.publicClient, "publicClient")),
    mfa: check(() => optionalOneOf(raw.mfa, "mfa", MFA_POLICIES)),
    signup: check(() => optionalBoolean(raw.signup, "signup")),
    tokenEndpointAuthMethod: check(() => optionalAuthMethod(raw.tokenEndpointAuthMethod)),
    jwks: check(() => optionalJwks(raw.jwks)),
    jwksUri: check(() => optionalJwksUri(raw.jwksUri)),
    exchangeAudiences: check(() =>
      optionalStringList(raw.exchangeAudiences, "exchangeAudiences", (a) => (/^[\x21-\x7e]{1,2048}$/.test(a) ? undefined : "must be 1-2048 printable characters without spaces")),
    ),
    allowImpersonation: check(() => optionalBoolean(raw.allowImpersonation, "allowImpersonation")),
    consentRequired: check(() => optionalBoolean(raw.consentRequired, "consentRequired")),
    requirePushedAuthorizationRequests: check(() => optionalBoolean(raw.requirePushedAuthorizationRequests, "requirePushedAuthorizationRequests")),
    dpopBoundAccessTokens: check(() => optionalBoolean(raw.dpopBoundAccessTokens, "dpopBoundAccessTokens")),
    backchannelLogoutUri: check(() => optionalBackchannelLogoutUri(raw.backchannelLogoutUri)),
    backchannelLogoutSessionRequired: check(() => optionalBoolean(raw.backchannelLogoutSessionRequired, "backchannelLogoutSessionRequired")),
    allowPrivateBackchannelLogoutUri: check(() => optionalBoolean(raw.allowPrivateBackchannelLogoutUri, "allowPrivateBackchannelLogoutUri")),
    profile: check(() => optionalProfile(raw.profile)),
  };
  checks.done();
  return input as ApplicationInput;
}

/** "" or `fapi2`; undefined when absent. "" is a value here (it clears the profile), so the RPC sends it as set or not at all. */
function optionalProfile(raw: unknown): ApplicationProfile | undefined {
  if (raw === undefined) return undefined;
  if (typeof raw !== "string" || !(APPLICATION_PROFILES as readonly string[]).includes(raw)) {
    throw new InvalidInputError("profile", `is not one of "" (none), ${APPLICATION_PROFILES.filter(Boolean).join(", ")}`);
  }
  return raw as ApplicationProfile;
}

/** One of `values`, or undefined when absent; the RPC's proto3 string arrives as "" when unset. */
function optionalOneOf<T extends string>(raw: unknown, field: string, values: readonly T[]): T | undefined {
  if (raw === undefined || raw === "") return undefined;
  if (typeof raw !== "string" || !(values as readonly string[]).includes(raw)) {
    throw new InvalidInputError(field, `is not one of ${values.join(", ")}`);
  }
  return raw as T;
}


/** Never in an audit event's diff: only named when it changed. */
const APPLICATION_SECRETS = ["clientSecretHash", "clientSecretSealed"];
/** What create and update return: the secret only when it was set or generated now. */
export interface SavedApplication {
  app: ApplicationRecord;
  clientSecret?: string;
}

/** Application management shared by the config file, the CLI and the admin RPCs. */
export class ApplicationAdmin {
  constructor(
    private readonly repo: ApplicationRepository,
    private readonly clock: Clock,
    private readonly hashCost: ScryptCost = SCRYPT_COST,
    private readonly audit: AuditTrail = noAudit,
    /** Seals the secrets of client_secret_jwt applications, which must be read back as HS256 keys. */
    private readonly secrets: SecretBox = new SecretBox(undefined),
  ) {}

  async create(input: ApplicationInput): Promise<SavedApplication> {
    refuseConsole(input);
    const auth = resolveAuthMethod(input);
    const publicClient = auth.publicClient;
    const grantTypes = withCodeGrant(input.grantTypes ?? []);
    checkPublicClient(publicClient, grantTypes, input);
    const { clientSecret, clientSecretHash } = publicClient ? noSecret() : await this.newSecret(input.clientSecret);
    const now = this.clock.now();
    const id = randomUUID();
    const app: ApplicationRecord = {
      id,
      name: input.name,
      // 128 bits at least, as client ids and secrets must not be guessable.
      clientId: input.clientId ?? randomToken(16),
      clientSecretHash,
      redirectUris: input.redirectUris ?? [],
      grantTypes,
      expireInHours: input.expireInHours ?? 1,
      refreshExpireInHours: input.refreshExpireInHours ?? 0,
      providers: input.providers ?? [],
      allowedOrigins: input.allowedOrigins ?? [],
      tokenFormat: input.tokenFormat ?? DEFAULT_TOKEN_FORMAT,
      signingAlg: input.signingAlg ?? DEFAULT_SIGNING_ALG,
      accessTokenStrategy: input.accessTokenStrategy ?? DEFAULT_ACCESS_TOKEN_STRATEGY,
      mfa: input.mfa ?? "optional",
      ...(input.signup ? { signup: true } : {}),
      // Admins create trusted applications: no consent page unless they ask for one.
      consentRequired: input.consentRequired ?? false,
      ...auth,
      clientSecretSealed: this.sealed(auth.tokenEndpointAuthMethod, id, clientSecret),
      exchangeAudiences: input.exchangeAudiences ?? [],
      allowImpersonation: input.allowImpersonation ?? false,
      requirePushedAuthorizationRequests: input.requirePushedAuthorizationRequests ?? false,
      ...(input.dpopBoundAccessTokens ? { dpopBoundAccessTokens: true } : {}),
      ...backchannelLogoutOf(input),
      ...(input.profile ? { profile: input.profile } : {}),
      createdAt: now,
      updatedAt: now,
    };
    refuseOutsideProfile(app);
    await conflictsAsErrors(() => this.repo.insert(app));
    this.recordChange("application_created", app, undefined, app);
    return { app, clientSecret };
  }

  async update(input: ApplicationInput): Promise<SavedApplication> {
    refuseConsole(input);
    const current = await this.get(input.name);
    refuseConsentOff(current, input);
    const auth = resolveAuthMethod(input, current);
    const publicClient = auth.publicClient;
    const grantTypes = input.grantTypes ? withCodeGrant(input.grantTypes) : current.grantTypes;
    checkPublicClient(publicClient, grantTypes, input);
    // Present only when on, as the store reads it back.
    const { signup: _signup, dpopBoundAccessTokens: _dpop, profile: _profile, ...unchanged } = current;
    const { clientSecret, clientSecretHash, clientSecretSealed } = await this.secretOnUpdate(current, auth.tokenEndpointAuthMethod, input.clientSecret);
    const app: ApplicationRecord = {
      ...unchanged,
      clientId: input.clientId ?? current.clientId,
      clientSecretHash,
      redirectUris: input.redirectUris ?? current.redirectUris,
      grantTypes,
      expireInHours: input.expireInHours ?? current.expireInHours,
      refreshExpireInHours: input.refreshExpireInHours ?? current.refreshExpireInHours,
      providers: input.providers ?? current.providers,
      allowedOrigins: input.allowedOrigins ?? current.allowedOrigins,
      tokenFormat: input.tokenFormat ?? current.tokenFormat,
      signingAlg: input.signingAlg ?? current.signingAlg,
      accessTokenStrategy: input.accessTokenStrategy ?? current.accessTokenStrategy,
      mfa: input.mfa ?? current.mfa ?? "optional",
      ...((input.signup ?? current.signup) ? { signup: true } : {}),
      ...auth,
      clientSecretSealed,
      exchangeAudiences: input.exchangeAudiences ?? current.exchangeAudiences,
      allowImpersonation: input.allowImpersonation ?? current.allowImpersonation,
      consentRequired: input.consentRequired ?? current.consentRequired,
      requirePushedAuthorizationRequests: input.requirePushedAuthorizationRequests ?? current.requirePushedAuthorizationRequests,
      ...((input.dpopBoundAccessTokens ?? current.dpopBoundAccessTokens) ? { dpopBoundAccessTokens: true } : {}),
      ...backchannelLogoutOf(input, current),
      ...((input.profile ?? current.profile) ? { profile: input.profile ?? current.profile } : {}),
      updatedAt: this.clock.now(),
    };
    refuseOutsideProfile(app);
    // Only what this update changed is written: a rotation or another update since our read stays.
    await conflictsAsErrors(() => this.repo.update(app, current));
    this.recordChange("application_updated", app, current, app);
    return { app, clientSecret };
  }

  /** A chosen secret, or a generated one (returned once). Generated secrets are checked with a SHA-256; chosen ones with scrypt. */
  private async newSecret(chosen: string | undefined): Promise<{ clientSecret: string; clientSecretHash: string }> {
    const clientSecret = chosen ?? randomToken();
    return { clientSecret, clientSecretHash: chosen === undefined ? hashGeneratedSecret(clientSecret) : await hashSecret(clientSecret, this.hashCost) };
  }

  /**
   * The secret after an update: none once the application turns public (the
   * old one stops working at once); a chosen or generated one when it turns
   * confidential, or turns to client_secret_jwt with no secret kept sealed
   * (only a hash of the old one is known, and HS256 needs the secret);
   * otherwise the chosen one, or the one it had.
   */
  private async secretOnUpdate(
    current: ApplicationRecord,
    method: TokenEndpointAuthMethod,
    chosen: string | undefined,
  ): Promise<{ clientSecret?: string; clientSecretHash: string; clientSecretSealed: string }> {
    if (method === "none") return { ...(current.publicClient ? { clientSecretHash: current.clientSecretHash } : noSecret()), clientSecretSealed: "" };
    const unsealable = method === "client_secret_jwt" && !current.clientSecretSealed;
    if (current.publicClient || (unsealable && chosen === undefined)) {
      const fresh = await this.newSecret(chosen);
      return { ...fresh, clientSecretSealed: this.sealed(method, current.id, fresh.clientSecret) };
    }
    const clientSecretHash = chosen ? await this.rehash(current, chosen) : current.clientSecretHash;
    const clientSecretSealed = method !== "client_secret_jwt" ? "" : chosen ? this.sealed(method, current.id, chosen) : current.clientSecretSealed;
    return { clientSecret: chosen, clientSecretHash, clientSecretSealed };
  }

  /** The secret sealed for a client_secret_jwt application (HS256 needs it, not a hash); "" for every other method. */
  private sealed(method: TokenEndpointAuthMethod, id: string, secret: string | undefined): string {
    return method === "client_secret_jwt" && secret ? this.secrets.seal(secret, clientSecretSealContext(id)) : "";
  }

  /** Create the application, or update it when one has this name (config file semantics). */
  async upsert(input: ApplicationInput): Promise<SavedApplication> {
    return (await this.repo.findByName(input.name)) ? this.update(input) : this.create(input);
  }

  async get(name: string): Promise<ApplicationRecord> {
    refuseConsole({ name });
    const app = await this.repo.findByName(name);
    if (!app) throw new OAuthError("not_found", `no application named ${echo(name)}`);
    return app;
  }

  /** Every application but the console's, which is the service's own. */
  async list(): Promise<ApplicationRecord[]> {
    return (await this.repo.list()).filter((app) => !isConsoleApplication(app));
  }

  async delete(name: string): Promise<void> {
    refuseConsole({ name });
    const current = await this.repo.findByName(name);
    if (!current || !(await this.repo.deleteByName(name))) throw new OAuthError("not_found", `no application named ${echo(name)}`);
    this.recordChange("application_deleted", current, current, undefined);
  }

  private recordChange(event: AuditEventName, app: ApplicationRecord, before: ApplicationRecord | undefined, after: ApplicationRecord | undefined): void {
    recordAdminChange(this.audit, event, { name: app.name, clientId: app.clientId }, before, after, APPLICATION_SECRETS);
  }

  /** A new generated secret, returned once; the old one stops working at once. */
  async rotateSecret(name: string): Promise<SavedApplication> {
    const current = await this.get(name);
    if (current.publicClient) throw new OAuthError("invalid_request", `${echo(name)} is a public client: it has no secret`);
    const clientSecret = randomToken();
    const clientSecretSealed = this.sealed(current.tokenEndpointAuthMethod, current.id, clientSecret);
    const app: ApplicationRecord = { ...current, clientSecretHash: hashGeneratedSecret(clientSecret), clientSecretSealed, updatedAt: this.clock.now() };
    // The secret alone: an update since our read keeps its fields.
    if (!(await this.repo.updateSecretHash(app.id, app.clientSecretHash, app.updatedAt, clientSecretSealed))) {
      throw new OAuthError("not_found", `no application named ${echo(name)}`);
    }
    this.recordChange("application_updated", app, current, app);
    return { app: (await this.repo.findByName(name)) ?? app, clientSecret };
  }

  // Re-applying a config file at every start must not re-hash an unchanged
  // secret (and so invalidate verification caches) each time.
  private async rehash(current: ApplicationRecord, secret: string): Promise<string> {
    return (await verifySecret(secret, current.clientSecretHash)) ? current.clientSecretHash : hashSecret(secret, this.hashCost);
  }

}

/**
 * The CORS allow-list (src/http/cors.ts): whether some application lists
 * `origin` in allowedOrigins. Read from the repository's cached set, so it
 * answers at once except when that set is read again (APPLICATION_CACHE_MS).
 */
export function originAllowList(repo: ApplicationRepository): (origin: string) => boolean | Promise<boolean> {
  return (origin) => {
    const origins = repo.allowedOrigins();
    return origins instanceof Promise ? origins.then((set) => set.has(origin)) : origins.has(origin);
  };
}

/** The back-channel logout fields after a create or update, the URI held to its rule with the leave it ends up with. */
function backchannelLogoutOf(
  input: ApplicationInput,
  current?: ApplicationRecord,
): Pick<ApplicationRecord, "backchannelLogoutUri" | "backchannelLogoutSessionRequired" | "allowPrivateBackchannelLogoutUri"> {
  const fields = {
    backchannelLogoutUri: input.backchannelLogoutUri ?? current?.backchannelLogoutUri ?? "",
    backchannelLogoutSessionRequired: input.backchannelLogoutSessionRequired ?? current?.backchannelLogoutSessionRequired ?? false,
    allowPrivateBackchannelLogoutUri: input.allowPrivateBackchannelLogoutUri ?? current?.allowPrivateBackchannelLogoutUri ?? false,
  };
  const problem = backchannelLogoutUriProblem(fields.backchannelLogoutUri, fields.allowPrivateBackchannelLogoutUri);
  if (problem) throw new InvalidInputError("backchannelLogoutUri", problem);
  return fields;
}

/** A `fapi2` application as it would be saved, held to the profile: every field it refuses named at once (oauth/fapi2.ts). */
function refuseOutsideProfile(app: ApplicationRecord): void {
  const checks = new FieldChecks();
  for (const { field, problem } of fapi2ApplicationProblems(app)) checks.refuse(field, problem);
  checks.done();
}

/** A public client takes no secret and none of the grants that need one. */
function checkPublicClient(publicClient: boolean, grantTypes: readonly string[], input: ApplicationInput): void {
  if (!publicClient) return;
  const checks = new FieldChecks();
  if (input.clientSecret !== undefined) checks.refuse("clientSecret", "must be left out: a public client has no secret");
  const refused = grantTypes.filter((g) => SECRET_GRANT_TYPES.includes(g));
  if (refused.length > 0) checks.refuse("grantTypes", `a public client cannot use ${refused.join(" or ")}: they need a client secret`);
  checks.done();
}

/** A registered client was written by someone else: its users always decide what it gets (issue 43 §3). */
function refuseConsentOff(current: ApplicationRecord, input: ApplicationInput): void {
  if (current.registration && input.consentRequired === false) {
    throw new InvalidInputError("consentRequired", "a registered client always needs its users' consent");
  }
}

const noSecret = (): { clientSecret?: string; clientSecretHash: string } => ({ clientSecretHash: noSecretHash() });

function withCodeGrant(grantTypes: string[]): string[] {
  return grantTypes.includes("authorization_code") ? grantTypes : ["authorization_code", ...grantTypes];
}

/**
 * The console's application (consoleClient.ts) is made and kept by the
 * service at every start; administration neither shows nor changes it, so it
 * cannot be deleted or opened up by accident.
 */
function refuseConsole(input: { name: string; clientId?: string }): void {
  if (isConsoleApplication({ name: input.name, clientId: input.clientId ?? "" })) {
    throw new OAuthError("invalid_request", `${CONSOLE_APP_NAME} is the admin console's own application: the service manages it`);
  }
}
