import { ApplicationAdmin, originAllowList } from "./../accounts/applications.js";
import { UserAdmin } from "./../accounts/users.js";
import { ResourceAdmin } from "./../accounts/resources.js";
import { ClientRegistrar, DEFAULT_REGISTRATIONS_PER_HOUR, type ClientRegistrationPolicy } from "./../accounts/clientRegistration.js";
import { ClientMetadataDocuments, METADATA_DOCUMENT_BOUNDS } from "./../accounts/clientMetadataDocuments.js";
import { REGISTRATION_PATH } from "./../oauth/discovery.js";
import { listUsersPage, type UserPage, type UserPageRequest } from "./../accounts/userPages.js";
import { UserSessions } from "./../accounts/userSessions.js";
import { UserConsents } from "./../accounts/userConsents.js";
import { OwnAccount } from "./../accounts/ownAccount.js";
import { consoleClientFor, ensureConsoleClient, type ConsoleClient } from "./../accounts/consoleClient.js";
import { ConsoleProviders } from "./../accounts/consoleProviders.js";
import { createSelfService, type SelfService, type SelfServiceOptions } from "./../accounts/selfService.js";
import { noAudit, type AuditTrail } from "./../shared/audit.js";
import type { Clock } from "./../shared/clock.js";
import { listAuditEvents, lockoutEvent, LoggedAuditTrail, type AuditPage, type AuditQuery } from "./auditTrail.js";
import { FederatedLogin } from "./../federation/federatedLogin.js";
import { AccountLinker } from "./../federation/linking.js";
import { LoginStates } from "./../federation/loginStates.js";
import { ProviderAdmin } from "./../federation/providers.js";
import { SecretBox } from "./../federation/secretBox.js";
import { DEFAULT_UPSTREAM_TIMEOUT_MS, MAX_UPSTREAM_BODY_BYTES, UpstreamClient } from "./../federation/upstream.js";
import { silentLogger, type Logger } from "./../shared/log.js";
import { ClientAuthenticator } from "./../oauth/clientAuth.js";
import { ClientAssertions } from "./../oauth/clientAssertion.js";
import { RemoteKeySets } from "./../federation/remoteKeySets.js";
import { TrustedIssuers, type TrustedIssuer } from "./../oauth/trustedIssuers.js";
import { ClientThrottle, type ClientAuthPolicy, type ClientLockout } from "./../oauth/clientThrottle.js";
import { AuthorizationCodes } from "./../oauth/codes.js";
import { DEFAULT_DEVICE_CODE_TTL_SECONDS, DeviceAuthorizations } from "./../oauth/deviceAuthorization.js";
import type { GrantDeps } from "./../oauth/grants/types.js";
import { AccountLookup } from "./../oauth/account.js";
import type { AuthorizeDeps } from "./../oauth/authorize.js";
import { Consents } from "./../oauth/consents.js";
import { AuthorizeEndpoint } from "./../oauth/authorizeEndpoint.js";
import { validateAuthorizeRequest } from "./../oauth/authorizeRequest.js";
import { AuthorizeSources } from "./../oauth/authorizeSources.js";
import { ClientKeys } from "./../oauth/clientKeys.js";
import { DEFAULT_PUSHED_REQUESTS_PER_CLIENT, PushedAuthorizations } from "./../oauth/pushedAuthorization.js";
import { RequestObjects } from "./../oauth/requestObject.js";
import { SignOut } from "./../oauth/endSession.js";
import { TokenEndpoint } from "./../oauth/tokenEndpoint.js";
import { TokenInspector } from "./../oauth/tokenInspector.js";
import { KeyRing, type KeyPairGenerator } from "./../oauth/keys.js";
import { randomToken, SCRYPT_COST, type ScryptCost } from "./../oauth/secrets.js";
import { LoginThrottle, type LoginPolicy, type Lockout } from "./../oauth/loginThrottle.js";
import { noMetrics, type Metrics } from "./../oauth/metrics.js";
import { PendingAuthorizations } from "./../oauth/pendingAuthorizations.js";
import { ResourceIndicators } from "./../oauth/resourceIndicators.js";
import { SessionManager } from "./../oauth/sessions.js";
import { SessionEnds } from "./../oauth/sessionEnds.js";
import { LogoutTokens } from "./../oauth/logoutTokens.js";
import { BACKCHANNEL_LOGOUT_DEFAULTS, BackchannelLogouts, type BackchannelLogoutOptions } from "./../oauth/backchannelLogout.js";
import { TokenMinter } from "./../oauth/tokens.js";
import { DPoPProofs, type DPoPNonceMode } from "./../oauth/dpop.js";
import { DPoPNonces } from "./../oauth/dpopNonces.js";
import { UserAuthenticator } from "./../oauth/userAuth.js";
import { SecondFactors } from "./../oauth/factors/secondFactors.js";
import { SignInPolicy } from "./../oauth/factors/signInPolicy.js";
import { Passkeys, relyingPartyOf } from "./../oauth/factors/passkeys.js";
import type { Store } from "./../store/index.js";

/**
 * Everything the front doors call, built once per process: service objects
 * only. The store stays behind them (test/architecture.spec.ts).
 */
export interface Domain {
  issuer: string;
  clock: Clock;
  keys: KeyRing;
  /** The token endpoint: every grant (oauth/tokenEndpoint.ts). */
  tokenEndpoint: TokenEndpoint;
  /** Introspection, userinfo, revocation and the user behind a token. */
  tokens: TokenInspector;
  /** The authorize endpoint's rules, for the browser pages. */
  authorize: AuthorizeEndpoint;
  /** The pushed authorization request endpoint (RFC 9126). */
  pushedAuthorizations: PushedAuthorizations;
  /** The caller's own account (get-account). */
  account: AccountLookup;
  /** RP-initiated sign-out. */
  signOut: SignOut;
  /** Remembered consent of applications that ask for it. */
  consents: Consents;
  /** What users allowed applications, listed and revoked by the user or an administrator. */
  userConsents: UserConsents;
  /** Client authentication at the endpoints that take it. */
  clients: ClientAuthenticator;
  /** Password sign-in, under the brute-force policy. */
  users: UserAuthenticator;
  /** One-time codes and recovery codes, under the same policy (oauth/factors/). */
  secondFactors: SecondFactors;
  /** A signed-in user's own sessions, linked providers and factors (the account page). */
  ownAccount: OwnAccount;
  /** Passkeys (WebAuthn): registration, a whole sign-in, a second factor (oauth/factors/passkeys.ts). */
  passkeys: Passkeys;
  /** Which second factor a sign-in needs, by application policy and acr_values. */
  signInPolicy: SignInPolicy;
  /** The device authorization endpoint and the /device page's rules (RFC 8628). */
  devices: DeviceAuthorizations;
  applicationAdmin: ApplicationAdmin;
  /** Dynamic client registration (RFC 7591, RFC 7592), under --client-registration. */
  registration: ClientRegistrar;
  /** Resource servers (RFC 8707): the config file's `resources`, the CLI and ResourceAdminService. */
  resourceAdmin: ResourceAdmin;
  /** Whether some application allows this browser origin (CORS); mostly answered from a cache, at once. */
  allowsOrigin: (origin: string) => boolean | Promise<boolean>;
  userAdmin: UserAdmin;
  /** Users a page at a time, with search (accounts/userPages.ts). */
  userPage(request: UserPageRequest): Promise<UserPage>;
  /** A user's sessions and refresh tokens, listed and ended by administration. */
  userSessions: UserSessions;
  providerAdmin: ProviderAdmin;
  sessions: SessionManager;
  /**
   * The one way a browser session ends, each end told to the session's
   * clients (back-channel logout): sign-out, admin revocation, and the
   * account page's password change (`userSessionsEnded`).
   */
  sessionEnds: SessionEnds;
  /** Delivers the queued logout tokens; the process starts and stops it. */
  backchannelLogouts: BackchannelLogouts;
  /** Authorize requests waiting for a sign-in. */
  pendingAuthorizations: PendingAuthorizations;
  /** Sign-in through Custom providers. */
  federation: FederatedLogin;
  /** Bearer token for the admin RPCs; undefined leaves them to admin users' tokens (rpc/adminAuth.ts). */
  adminToken?: string;
  /** The admin console's public client, which /admin signs in with (accounts/consoleClient.ts). */
  console: ConsoleClient;
  /** The providers the console's sign-in page offers: the stored setting, or --console-providers. */
  consoleProviders: ConsoleProviders;
  /** Creates the console's application, or brings it back to what it must be; run once at start. */
  ensureConsoleClient(): Promise<"created" | "updated" | "unchanged">;
  /** The stored audit events, newest first, a page at a time. */
  auditEvents(query: AuditQuery): Promise<AuditPage>;
  /** What the readiness probe asks. */
  readiness: Readiness;
  /** Sign-up, password reset and email verification by mail (accounts/selfService.ts). */
  selfService: SelfService;
  /** DPoP proofs (RFC 9449) and the server's nonces, which the doors offer in answers. */
  dpop: DPoPProofs;
}

/** Whether this instance can serve: its database answers and a signing key is loaded. */
export interface Readiness {
  /** Resolves once the database answers; rejects when it cannot be reached. */
  database(): Promise<void>;
  signingKeyLoaded(): boolean;
}

export interface DomainOptions {
  store: Store;
  clock: Clock;
  issuer: string;
  /** Where domain events are counted; nowhere by default. */
  metrics?: Metrics;
  /** How long a rotated key is published before it signs (ms). */
  keyActivationDelayMs?: number;
  adminToken?: string;
  keyReloadMs?: number;
  refreshReuseGraceSeconds?: number;
  /** --console-providers: the login providers this instance's console sign-in offers, instead of the stored setting; none when absent. */
  consoleProviders?: string[];
  /** Brute-force policy of the password grant and the login form; off when absent. */
  loginPolicy?: LoginPolicy;
  /** Told of each lockout as it begins. */
  onLockout?: (lockout: Lockout) => void;
  /** Failure budgets of client authentication; none when absent. */
  clientAuthPolicy?: ClientAuthPolicy;
  /** Told of each client lockout as it begins. */
  onClientLockout?: (lockout: ClientLockout) => void;
  sessionTtlSeconds?: number;
  codeTtlSeconds?: number;
  /** The config file's trustedIssuers: platforms whose tokens workloads present (RFC 7523 §2.1). */
  trustedIssuers?: TrustedIssuer[];
  /** --require-pushed-authorization-requests: every client's authorize requests come through PAR (RFC 9126 §5). */
  requirePushedAuthorizationRequests?: boolean;
  /** --pushed-requests-max-per-client: live pushed requests one client may hold (RFC 9126 §2.3: beyond, 429). */
  pushedRequestsMaxPerClient?: number;
  /** --device-code-ttl-seconds: how long a device code may be polled (RFC 8628 §3.2 expires_in). */
  deviceCodeTtlSeconds?: number;
  /** Makes the key pairs of new signing keys (RSA by default; tests reuse one to save its cost). */
  generateKeyPair?: KeyPairGenerator;
  /** The scrypt cost of newly hashed passwords and client secrets (tests lower it). */
  secretHashCost?: ScryptCost;
  /** IDENTITY_SECRET_KEY: encrypts provider client secrets at rest; unset stores them as given. */
  secretKey?: string;
  /** Deadline of each call to a provider. */
  federationTimeoutMs?: number;
  /** Where federation failures are logged (never with secrets), and the audit trail's lines. */
  logger?: Logger;
  /** --client-registration and its limits; off when absent. */
  clientRegistration?: ClientRegistrationPolicy;
  /** --allow-insecure-client-metadata (tests only): client ID metadata documents on loopback, over https or http. */
  allowInsecureClientMetadata?: boolean;
  /** Record security events (docs/audit.md) in the log and the database; default true. */
  auditEvents?: boolean;
  /** Mail settings and the rules of sign-up and password reset; no mail when absent. */
  selfService?: SelfServiceOptions;
  /** --dpop-nonce: server nonces in DPoP proofs (RFC 9449 §8); off when absent. */
  dpopNonce?: DPoPNonceMode;
  /** Back-channel logout delivery: polling, retry pauses, deadline (tests shorten them). */
  backchannelLogout?: Partial<BackchannelLogoutOptions>;
}

const NO_LOCKOUT: LoginPolicy = { maxFailures: 0, lockoutSeconds: 0 };

/** RFC 7591 registration, off unless the options say otherwise. */
function clientRegistrarOf(options: DomainOptions, audit: AuditTrail): ClientRegistrar {
  const { store, clock, issuer } = options;
  const given = options.clientRegistration ?? { mode: "off" as const, maxPerHour: DEFAULT_REGISTRATIONS_PER_HOUR };
  const policy = { ...given, loopbackLogout: options.allowInsecureClientMetadata ?? false };
  const clientUri = (clientId: string) => `${issuer}${REGISTRATION_PATH}/${encodeURIComponent(clientId)}`;
  return new ClientRegistrar(store.applications, store.registrationCounts, clock, policy, clientUri, audit);
}

/**
 * Client ID metadata documents, read under `--client-registration open`
 * with their own bounded outbound client (5 KB, a short deadline).
 */
function metadataDocumentsOf(options: DomainOptions, registration: ClientRegistrar, audit: AuditTrail): ClientMetadataDocuments {
  const { store, clock } = options;
  const upstream = new UpstreamClient({ timeoutMs: METADATA_DOCUMENT_BOUNDS.timeoutMs, maxBodyBytes: METADATA_DOCUMENT_BOUNDS.maxBytes, clock });
  const { mode, maxPerHour } = registration.policy;
  const policy = { enabled: mode === "open", allowInsecure: options.allowInsecureClientMetadata ?? false, maxPerHour };
  return new ClientMetadataDocuments(store.applications, store.registrationCounts, clock, upstream, policy, audit);
}

/** Client authentication's failure budgets, when a policy is given; each lockout audited and told. */
function clientThrottleOf(options: DomainOptions, audit: AuditTrail): ClientThrottle | undefined {
  if (!options.clientAuthPolicy) return undefined;
  return new ClientThrottle(options.store.loginFailures, options.clock, options.clientAuthPolicy, (lockout) => {
    audit.record(lockoutEvent(lockout));
    options.onClientLockout?.(lockout);
  });
}

/** Sign-in's failure budgets (off without a policy); each lockout counted, audited and told. */
function loginThrottleOf(options: DomainOptions, metrics: Metrics, audit: AuditTrail): LoginThrottle {
  return new LoginThrottle(options.store.loginFailures, options.clock, options.loginPolicy ?? NO_LOCKOUT, (lockout) => {
    metrics.lockout();
    audit.record(lockoutEvent(lockout));
    options.onLockout?.(lockout);
  });
}

/** The authorize endpoint and PAR, which share the request objects' checks and the pushed requests. */
function authorizeDoors(options: DomainOptions, clients: ClientAuthenticator, clientKeys: ClientKeys, responses: AuthorizeDeps, resources: ResourceIndicators, documents: ClientMetadataDocuments, dpop: DPoPProofs) {
  const { store, clock, issuer } = options;
  // Every client lookup of the authorize endpoint and PAR, metadata documents in front.
  const apps = documents.lookup(store.applications);
  const requestObjects = new RequestObjects(issuer, clock, clientKeys, store.requestObjectJtis);
  const pushedAuthorizations = new PushedAuthorizations({
    clock,
    repo: store.pushedAuthorizationRequests,
    clients,
    requestObjects,
    dpop,
    maxLivePerClient: options.pushedRequestsMaxPerClient ?? DEFAULT_PUSHED_REQUESTS_PER_CLIENT,
    validate: (params) => validateAuthorizeRequest(params, apps, resources),
  });
  const sources = new AuthorizeSources(apps, requestObjects, pushedAuthorizations);
  const authorize = new AuthorizeEndpoint(apps, clock, responses, resources, store.ownAccounts, sources, options.requirePushedAuthorizationRequests ?? false, documents);
  return { authorize, pushedAuthorizations };
}

/** DPoP proofs, with nonces made from the secret every instance shares when --dpop-nonce is not off. */
async function dpopProofsOf(options: DomainOptions): Promise<DPoPProofs> {
  const { store, clock } = options;
  const mode = options.dpopNonce ?? "off";
  const nonces = mode === "off" ? undefined : new DPoPNonces(await store.dpopNonceSecret.secret(randomToken(), clock.now()), clock);
  return new DPoPProofs(store.dpopProofJtis, clock, nonces, mode);
}

/** The delivery of logout tokens: signed like ID tokens, POSTed through the outbound rules within its own deadline. */
function backchannelLogoutsOf(options: DomainOptions, keys: KeyRing, audit: AuditTrail, logger: Logger): BackchannelLogouts {
  const { store, clock, issuer } = options;
  const timeoutMs = Math.min(options.backchannelLogout?.timeoutMs ?? BACKCHANNEL_LOGOUT_DEFAULTS.timeoutMs, options.federationTimeoutMs ?? DEFAULT_UPSTREAM_TIMEOUT_MS);
  // An answer is not read: a small cap is enough.
  const upstream = new UpstreamClient({ timeoutMs, maxBodyBytes: 64 * 1024, clock });
  const tokens = new LogoutTokens(keys, store.signingKeys, clock, issuer);
  return new BackchannelLogouts({ store, tokens, upstream, clock, audit, logger }, { ...options.backchannelLogout, timeoutMs });
}

/** Device authorization (RFC 8628): its codes, under the sign-in's failure budget for user codes. */
function devicesOf(options: DomainOptions, clients: ClientAuthenticator, throttle: LoginThrottle): DeviceAuthorizations {
  const { store, clock, issuer } = options;
  const ttlSeconds = options.deviceCodeTtlSeconds ?? DEFAULT_DEVICE_CODE_TTL_SECONDS;
  return new DeviceAuthorizations({ issuer, clock, codes: store.deviceCodes, applications: store.applications, clients, throttle, ttlSeconds });
}

export async function createDomain(options: DomainOptions): Promise<Domain> {
  const { store, clock, issuer } = options;
  const metrics = options.metrics ?? noMetrics;
  const logger = options.logger ?? silentLogger;
  const audit: AuditTrail = options.auditEvents === false ? noAudit : new LoggedAuditTrail(store.auditWriter, logger, clock);
  const keys = new KeyRing(store.signingKeys, clock, options.keyReloadMs, options.keyActivationDelayMs, options.generateKeyPair);
  await keys.init();
  keys.audit = audit;
  const secretBox = new SecretBox(options.secretKey);
  const providerAdmin = new ProviderAdmin(store.providers, clock, secretBox, audit);
  const upstream = new UpstreamClient({ timeoutMs: options.federationTimeoutMs ?? DEFAULT_UPSTREAM_TIMEOUT_MS, maxBodyBytes: MAX_UPSTREAM_BODY_BYTES, clock });
  const federation = new FederatedLogin(issuer, providerAdmin, new LoginStates(store.federationStates, clock), upstream, new AccountLinker(store.accountLinks, clock), logger, metrics, audit);
  const consoleClient = consoleClientFor(issuer);
  const remoteKeySets = new RemoteKeySets(upstream);
  const clientKeys = new ClientKeys(remoteKeySets);
  const minter = new TokenMinter(store, keys, clock, issuer);
  const codes = new AuthorizationCodes(store, clock, metrics, options.codeTtlSeconds);
  const registration = clientRegistrarOf(options, audit);
  const documents = metadataDocumentsOf(options, registration, audit);
  // Every client lookup of the authorize and token endpoints, metadata documents in front.
  const clientLookup = documents.lookup(store.applications);
  const clients = new ClientAuthenticator(
    clientLookup,
    undefined,
    clientThrottleOf(options, audit),
    new ClientAssertions(issuer, clock, store.clientAssertionJtis, clientKeys, secretBox),
  );
  // One budget for passwords and second-factor codes alike (issue #46 §1).
  const loginThrottle = loginThrottleOf(options, metrics, audit);
  const users = new UserAuthenticator(store.users, loginThrottle, metrics, audit);
  const secondFactors = new SecondFactors(store.userFactors, clock, secretBox, loginThrottle, audit, new URL(issuer).hostname);
  const backchannelLogouts = backchannelLogoutsOf(options, keys, audit, logger);
  const sessionEnds = new SessionEnds(store, clock, () => backchannelLogouts.wake());
  const sessions = new SessionManager(store, clock, options.sessionTtlSeconds, sessionEnds);
  const dpop = await dpopProofsOf(options);
  const resourceServers = new ResourceIndicators(store.resources);
  const grantDeps: GrantDeps = {
    store,
    clock,
    metrics,
    audit,
    minter,
    clients,
    users,
    codes,
    resources: resourceServers,
    refreshReuseGraceSeconds: options.refreshReuseGraceSeconds ?? 0,
    issuer,
    keys,
    trustedIssuers: new TrustedIssuers(options.trustedIssuers ?? [], clock, remoteKeySets, upstream),
    dpop,
  };
  return {
    issuer,
    clock,
    keys,
    tokenEndpoint: new TokenEndpoint(grantDeps),
    tokens: new TokenInspector(store, clock, issuer, metrics, audit, dpop),
    ...authorizeDoors(options, clients, clientKeys, { issuer, minter, codes, metrics, audit, sessions }, resourceServers, documents, dpop),
    account: new AccountLookup({ store, clock, sessions, dpop }),
    signOut: new SignOut({ store, keys, issuer, sessions }),
    consents: new Consents(store.consents, clock),
    userConsents: new UserConsents(store, clock, audit),
    clients,
    users,
    secondFactors,
    passkeys: new Passkeys(store.userFactors, store.webauthnChallenges, store.users, secondFactors, clock, audit, relyingPartyOf(issuer)),
    signInPolicy: new SignInPolicy(secondFactors, store.users, audit),
    ownAccount: new OwnAccount(store, secondFactors, clock, audit),
    devices: devicesOf(options, clients, loginThrottle),
    applicationAdmin: new ApplicationAdmin(store.applications, clock, options.secretHashCost, audit, secretBox),
    resourceAdmin: new ResourceAdmin(store.resources, clock, audit),
    registration,
    allowsOrigin: originAllowList(store.applications),
    userAdmin: new UserAdmin(store.users, clock, options.secretHashCost, audit, () => sessionEnds.queued()),
    userPage: (request) => listUsersPage(store.users, request),
    userSessions: new UserSessions(store, clock, audit, sessionEnds),
    providerAdmin,
    sessions,
    sessionEnds,
    backchannelLogouts,
    pendingAuthorizations: new PendingAuthorizations(store.authorizationRequests, clock),
    federation,
    adminToken: options.adminToken,
    console: consoleClient,
    consoleProviders: new ConsoleProviders(store.applications, store.providers, clock, audit, options.consoleProviders),
    ensureConsoleClient: () => ensureConsoleClient(store.applications, clock, consoleClient),
    auditEvents: (query) => listAuditEvents(store.auditEvents, query),
    readiness: { database: () => store.ping(), signingKeyLoaded: () => keys.hasSigningKey() },
    selfService: createSelfService(
      store,
      { issuer, clock, audit, logger, hashCost: options.secretHashCost ?? SCRYPT_COST, clearLockout: (name) => loginThrottle.clearName(name), checkPassword: (user, password, address) => users.checkPassword(user, password, address), sessionsEnded: () => sessionEnds.queued() },
      options.selfService,
    ),
    dpop,
  };
}
