import { ApplicationAdmin } from "./accounts/applications.js";
import { UserAdmin } from "./accounts/users.js";
import type { Clock } from "./clock.js";
import { ProviderAdmin } from "./federation/providers.js";
import { ClientAuthenticator } from "./oauth/clientAuth.js";
import { AuthorizationCodes } from "./oauth/codes.js";
import type { GrantDeps } from "./oauth/grants/types.js";
import { KeyRing } from "./oauth/keys.js";
import { LoginThrottle, type LoginPolicy, type Lockout } from "./oauth/loginThrottle.js";
import { PendingAuthorizations } from "./oauth/pendingAuthorizations.js";
import { SessionManager } from "./oauth/sessions.js";
import { TokenMinter } from "./oauth/tokens.js";
import { UserAuthenticator } from "./oauth/userAuth.js";
import type { Store } from "./store/index.js";

/** Everything the front doors call, built once per process. */
export interface Domain extends GrantDeps {
  issuer: string;
  keys: KeyRing;
  applicationAdmin: ApplicationAdmin;
  userAdmin: UserAdmin;
  providerAdmin: ProviderAdmin;
  sessions: SessionManager;
  /** Authorize requests waiting for a sign-in. */
  pendingAuthorizations: PendingAuthorizations;
  /** Bearer token for the admin RPCs; undefined keeps them closed. */
  adminToken?: string;
}

export interface DomainOptions {
  store: Store;
  clock: Clock;
  issuer: string;
  adminToken?: string;
  keyReloadMs?: number;
  refreshReuseGraceSeconds?: number;
  /** Brute-force policy of the password grant and the login form; off when absent. */
  loginPolicy?: LoginPolicy;
  /** Told of each lockout as it begins. */
  onLockout?: (lockout: Lockout) => void;
  sessionTtlSeconds?: number;
  codeTtlSeconds?: number;
}

const NO_LOCKOUT: LoginPolicy = { maxFailures: 0, lockoutSeconds: 0 };

export async function createDomain(options: DomainOptions): Promise<Domain> {
  const { store, clock, issuer } = options;
  const keys = new KeyRing(store.signingKeys, clock, options.keyReloadMs);
  await keys.init();
  return {
    issuer,
    store,
    clock,
    keys,
    minter: new TokenMinter(store, keys, clock, issuer),
    clients: new ClientAuthenticator(store.applications),
    users: new UserAuthenticator(
      store.users,
      new LoginThrottle(store.loginFailures, clock, options.loginPolicy ?? NO_LOCKOUT, options.onLockout),
    ),
    codes: new AuthorizationCodes(store, clock, options.codeTtlSeconds),
    applicationAdmin: new ApplicationAdmin(store.applications, clock),
    userAdmin: new UserAdmin(store.users, clock),
    providerAdmin: new ProviderAdmin(store.providers, clock),
    sessions: new SessionManager(store, clock, options.sessionTtlSeconds),
    pendingAuthorizations: new PendingAuthorizations(store.authorizationRequests, clock),
    adminToken: options.adminToken,
    refreshReuseGraceSeconds: options.refreshReuseGraceSeconds ?? 0,
  };
}
