import { AccountLinkRepository } from "./accountLinks.js";
import { ConsentRepository } from "./consents.js";
import { ActionLimitRepository } from "./actionLimits.js";
import { EmailLinkRepository } from "./emailLinks.js";
import { ApplicationRepository } from "./applications.js";
import { AuditEventRepository, AuditEventWriter } from "./auditEvents.js";
import { AuthorizationCodeRepository } from "./authorizationCodes.js";
import { AuthorizationRequestRepository } from "./authorizationRequests.js";
import type { Db } from "./db.js";
import { FederatedIdentityRepository } from "./federatedIdentities.js";
import { FederationStateRepository } from "./federationStates.js";
import { SigningKeyRepository } from "./keys.js";
import { LoginFailureRepository } from "./loginFailures.js";
import { PushedAuthorizationRequestRepository } from "./pushedAuthorizationRequests.js";
import { DeviceCodeRepository } from "./deviceCodes.js";
import { DPoPNonceSecretRepository } from "./dpopProofs.js";
import { SingleUseKeyRepository } from "./singleUseKeys.js";
import { ProviderRepository } from "./providers.js";
import { ResourceRepository } from "./resources.js";
import { RegistrationCountRepository } from "./registrationCounts.js";
import { createRowReader, knexRowReader, type RowReader } from "./rowReader.js";
import { SessionRepository } from "./sessions.js";
import { BackchannelLogoutRepository } from "./backchannelLogouts.js";
import { AccessTokenRepository, issuedTokenRecorder, RefreshTokenRepository, type IssuedTokenRecorder } from "./tokens.js";
import { UserRepository } from "./users.js";
import { UserSignInRepository } from "./userSignIns.js";
import { UserFactorRepository, WebAuthnChallengeRepository } from "./userFactors.js";
import { OwnAccountRepository } from "./ownAccounts.js";
import { silentLogger, type Logger } from "../shared/log.js";

/** Every repository over one database handle. */
export interface Store {
  db: Db;
  applications: ApplicationRepository;
  users: UserRepository;
  signingKeys: SigningKeyRepository;
  accessTokens: AccessTokenRepository;
  refreshTokens: RefreshTokenRepository;
  /** Where newly issued tokens are recorded outside any caller's transaction. */
  issuedTokens: IssuedTokenRecorder;
  providers: ProviderRepository;
  /** Resource servers (RFC 8707). */
  resources: ResourceRepository;
  /** Successful client registrations per address (--registration-max-per-hour). */
  registrationCounts: RegistrationCountRepository;
  sessions: SessionRepository;
  /** The durable queue of back-channel logouts, filled as sessions end. */
  backchannelLogouts: BackchannelLogoutRepository;
  /** A user's sessions and refresh tokens, as administration lists and ends them. */
  userSignIns: UserSignInRepository;
  authorizationCodes: AuthorizationCodeRepository;
  authorizationRequests: AuthorizationRequestRepository;
  loginFailures: LoginFailureRepository;
  /** The jti of each accepted client assertion, until it expires (RFC 7523 §3). */
  clientAssertionJtis: SingleUseKeyRepository;
  /** Pushed authorization requests (RFC 9126), each taken once by the client that pushed it. */
  pushedAuthorizationRequests: PushedAuthorizationRequestRepository;
  /** The jti of each accepted DPoP proof, until its iat window ends (RFC 9449 §11.1). */
  dpopProofJtis: SingleUseKeyRepository;
  /** The jti of each accepted request object that carries one, until its exp (RFC 7519 §4.1.7). */
  requestObjectJtis: SingleUseKeyRepository;
  /** The secret every instance makes DPoP nonces with (RFC 9449 §8). */
  dpopNonceSecret: DPoPNonceSecretRepository;
  /** Device authorizations (RFC 8628), by device code and by user code. */
  deviceCodes: DeviceCodeRepository;
  federationStates: FederationStateRepository;
  federatedIdentities: FederatedIdentityRepository;
  /** External accounts linked to local users, user and link written together (federated sign-in). */
  accountLinks: AccountLinkRepository;
  /** What users allowed applications that ask for consent. */
  consents: ConsentRepository;
  auditEvents: AuditEventRepository;
  /** Users' second factors and recovery codes. */
  userFactors: UserFactorRepository;
  /** WebAuthn challenges, each taken once. */
  webauthnChallenges: WebAuthnChallengeRepository;
  /** A signed-in user's changes to their own account, each decided atomically (the account page). */
  ownAccounts: OwnAccountRepository;
  /** The single-use links mailed for email verification and password reset. */
  emailLinks: EmailLinkRepository;
  /** Hourly budgets of sign-ups and reset requests, taken atomically. */
  actionLimits: ActionLimitRepository;
  /** Where audit events are queued and written in batches, off the request's path; close() writes what is queued. */
  auditWriter: AuditEventWriter;
  /** Which path serves the hot lookups (token by hash, client by id, user by id): `knex` is the plain one. */
  readPath: RowReader["path"];
  /** Resolves once the database answers a trivial query. */
  ping(): Promise<void>;
  /** The connection pool's load, for metrics (zeros where there is no pool). */
  poolStats(): PoolStats;
  /** Closes what the store opened besides `db` (which its owner destroys). */
  close(): Promise<void>;
}

export interface PoolStats {
  inUse: number;
  pendingAcquires: number;
}

/** The pool knex keeps under `db.client.pool` (tarn). */
interface TarnPool {
  numUsed(): number;
  numPendingAcquires(): number;
}

export interface StoreOptions {
  /** The hot lookups through the row reader's fast path (rowReader.ts); false: plain Knex queries. Default true. */
  fastReads?: boolean;
  /** Token responses' rows grouped into one write (groupCommit.ts); false: one write each. Default true. */
  groupCommit?: boolean;
  /** Single-use keys (client assertion, DPoP proof and request object jtis) recorded many to a write (singleUseKeys.ts); false: one write each. Default true. */
  jtiBatches?: boolean;
  /** On a SQLite file, audit batches staged on a connection of their own (sqliteAuditBatches.ts); false: the pool's. Default true. */
  auditStaging?: boolean;
  /** Where the audit writer reports events it could not write yet. */
  logger?: Logger;
}

export function createStore(db: Db, options: StoreOptions = {}): Store {
  const reads = options.fastReads === false ? knexRowReader(db) : createRowReader(db);
  const auditEvents = new AuditEventRepository(db, options.auditStaging !== false);
  const logger = options.logger ?? silentLogger;
  const auditWriter = new AuditEventWriter(auditEvents, logger);
  const users = new UserRepository(db, reads);
  const federatedIdentities = new FederatedIdentityRepository(db);
  return {
    db,
    readPath: reads.path,
    applications: new ApplicationRepository(db, reads),
    users,
    signingKeys: new SigningKeyRepository(db),
    accessTokens: new AccessTokenRepository(db, reads),
    refreshTokens: new RefreshTokenRepository(db),
    issuedTokens: issuedTokenRecorder(db, options.groupCommit !== false),
    providers: new ProviderRepository(db),
    resources: new ResourceRepository(db),
    registrationCounts: new RegistrationCountRepository(db),
    sessions: new SessionRepository(db),
    userSignIns: new UserSignInRepository(db),
    backchannelLogouts: new BackchannelLogoutRepository(db),
    authorizationCodes: new AuthorizationCodeRepository(db),
    authorizationRequests: new AuthorizationRequestRepository(db),
    loginFailures: new LoginFailureRepository(db),
    clientAssertionJtis: new SingleUseKeyRepository(db, "client_assertion_jtis", options.jtiBatches !== false),
    pushedAuthorizationRequests: new PushedAuthorizationRequestRepository(db),
    dpopProofJtis: new SingleUseKeyRepository(db, "dpop_proof_jtis", options.jtiBatches !== false),
    requestObjectJtis: new SingleUseKeyRepository(db, "request_object_jtis", options.jtiBatches !== false),
    dpopNonceSecret: new DPoPNonceSecretRepository(db),
    deviceCodes: new DeviceCodeRepository(db),
    federationStates: new FederationStateRepository(db),
    federatedIdentities,
    accountLinks: new AccountLinkRepository(db, users, federatedIdentities),
    consents: new ConsentRepository(db),
    auditEvents,
    emailLinks: new EmailLinkRepository(db),
    actionLimits: new ActionLimitRepository(db),
    auditWriter,
    userFactors: new UserFactorRepository(db),
    webauthnChallenges: new WebAuthnChallengeRepository(db),
    ownAccounts: new OwnAccountRepository(db),
    ping: async () => {
      await db.raw("select 1");
    },
    poolStats: () => {
      const pool = (db.client as { pool?: TarnPool }).pool;
      return { inUse: pool?.numUsed() ?? 0, pendingAcquires: pool?.numPendingAcquires() ?? 0 };
    },
    close: async () => {
      // Queued audit events go to the database before it closes: a clean shutdown loses none.
      await auditWriter.flush().catch((err: unknown) => logger.error("audit events lost at shutdown", { error: (err as Error).message }));
      await Promise.all([reads.close(), auditEvents.close()]);
    },
  };
}
