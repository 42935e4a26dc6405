import type { Clock } from "../shared/clock.js";
import type { Store } from "../store/index.js";
import { accessTokenClaimsOf, requireUserToken } from "./accessTokens.js";
import type { DPoPProofs, PresentedToken } from "./dpop.js";
import { OAuthError } from "./errors.js";
import { requireRecentSignIn } from "./recentSignIn.js";
import { accountFieldsForScopes, ALL_ACCOUNT_FIELDS, type AccountField } from "./scopes.js";
import type { SessionManager } from "./sessions.js";
import type { AccessTokenRecord } from "../store/tokens.js";
import type { FederatedIdentityRecord, UserRecord } from "../shared/model.js";

/** How a caller may prove who they are: an access token (Bearer, or DPoP with a proof) or a session cookie. */
export interface Caller {
  accessToken?: PresentedToken;
  sessionCookie?: string;
}

/** What finding the caller's account takes. */
interface AccountDeps {
  store: Store;
  clock: Clock;
  sessions: SessionManager;
  dpop: Pick<DPoPProofs, "verify">;
}

/** The user behind a call, and which get-account fields the caller may see. */
export interface SignedInAccount {
  user: UserRecord;
  /** All of them for the browser session; for a token, what its scopes release (scopes.ts). */
  fields: ReadonlySet<AccountField>;
}

/**
 * The user behind a call. A Bearer token, when sent, decides alone: a bad one
 * is `invalid_token` even if a session cookie rides along.
 */
export async function signedInAccount(
  deps: AccountDeps,
  caller: Caller,
): Promise<SignedInAccount> {
  if (caller.accessToken !== undefined) {
    const { record, user } = await requireUserToken(deps.store, deps.clock, caller.accessToken, deps.dpop);
    return { user, fields: accountFieldsForScopes(record.scope.split(" ")) };
  }
  const found = await deps.sessions.find(caller.sessionCookie);
  if (found) return { user: found.user, fields: ALL_ACCOUNT_FIELDS };
  throw new OAuthError(
    "login_required",
    caller.sessionCookie ? "the session has ended; sign in again" : "not signed in: send a session cookie or a Bearer access token",
  );
}

/** The account of whoever calls: a token's user or the browser's, and the external accounts linked to it. */
export class AccountLookup {
  constructor(private readonly deps: AccountDeps) {}

  signedIn(caller: Caller): Promise<SignedInAccount> {
    return signedInAccount(this.deps, caller);
  }

  /**
   * The user of the account API (AccountService) behind an access token,
   * never a cookie: a live token of an enabled user, presented as its
   * binding asks (requireUserToken), granted `openid`, the scope of a token
   * that stands for the user's own sign-in (OIDC Core §3.1.2.1); without it,
   * `insufficient_scope` (RFC 6750 §3.1). With `recentSignIn`, the sign-in
   * must also be recent (recentSignIn.ts, RFC 9470).
   */
  async tokenCaller(presented: PresentedToken | undefined, needs: { recentSignIn: boolean }): Promise<UserRecord> {
    const { record, user, hash } = await requireUserToken(this.deps.store, this.deps.clock, presented, this.deps.dpop);
    if (!record.scope.split(" ").includes("openid")) throw new OAuthError("insufficient_scope", "the access token lacks the openid scope", 403);
    // requireUserToken refused a call without a token.
    if (needs.recentSignIn) requireRecentSignIn(authTimeOf(record, hash, presented!), this.deps.clock.now(), presented!.scheme);
    return user;
  }

  linkedIdentities(userId: string): Promise<FederatedIdentityRecord[]> {
    return this.deps.store.federatedIdentities.listByUser(userId);
  }
}

/** RFC 9068 §2.2.1: when the token's user signed in, as a JWT's payload or an opaque token's row says; undefined where it does not. */
function authTimeOf(record: AccessTokenRecord, hash: string, presented: PresentedToken): number | undefined {
  const authTime = presented.token ? accessTokenClaimsOf(record, hash, presented.token).auth_time : undefined;
  return typeof authTime === "number" ? authTime : undefined;
}
