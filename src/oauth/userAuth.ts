import type { UserRepository } from "../store/users.js";
import { OAuthError } from "./errors.js";
import type { LoginThrottle } from "./loginThrottle.js";
import type { Metrics } from "./metrics.js";
import { DUMMY_SECRET_HASH, OneCheckAtATime, sha256, verifySecret } from "./secrets.js";
import { userActor, type AuditTrail } from "../shared/audit.js";
import type { UserRecord } from "../shared/model.js";

/**
 * Checks user passwords for the password grant and the login form, without
 * revealing whether a user exists, under one brute-force policy.
 */
export class UserAuthenticator {
  constructor(
    private readonly users: UserRepository,
    private readonly throttle: LoginThrottle,
    private readonly metrics: Metrics,
    private readonly audit: AuditTrail,
    private readonly verify: (password: string, hash: string) => Promise<boolean> = verifySecret,
  ) {}

  /** Password checks (scrypt) run one at a time per process, after the throttle let them through (secrets.ts says why). */
  private readonly checks = new OneCheckAtATime();

  /** Attempts under way, by name and password: the same sign-in sent again meanwhile shares its check. */
  private readonly underWay = new Map<string, Promise<UserRecord | undefined>>();

  /**
   * `clientAddress` is where the attempt came from, for the per-address limit.
   * Identical attempts at once (a client retrying, a burst of one user's
   * logins) cost one place in the budgets and one password check between them.
   * `clientId` names the application a password grant came through, for the audit trail.
   */
  async authenticate(username: string, password: string, clientAddress?: string, clientId?: string): Promise<UserRecord> {
    const key = sha256(`${username}\u0000${password}`);
    let pending = this.underWay.get(key);
    if (!pending) {
      pending = this.attempt(username, password, clientAddress).finally(() => this.underWay.delete(key));
      this.underWay.set(key, pending);
    }
    const signIn = { event: "sign_in", clientAddress, clientId } as const;
    let user: UserRecord | undefined;
    try {
      user = await pending;
    } catch (err) {
      // Refused by the lockout; a database that cannot answer is no sign-in attempt to audit.
      if (err instanceof OAuthError) {
        this.audit.record({ ...signIn, outcome: "failure", actor: namedUser(username), userName: username.slice(0, 64), details: { reason: "locked" } });
      }
      throw err;
    }
    if (!user) {
      this.metrics.loginFailure();
      this.audit.record({ ...signIn, outcome: "failure", actor: namedUser(username), userName: username.slice(0, 64), details: { reason: "invalid_credentials" } });
      throw new OAuthError("invalid_grant", "invalid username or password");
    }
    if (user.mustVerifyEmail && !user.emailVerified) {
      // An account made by sign-up signs in once its email is verified (issue 47 §2); its password was right, so nothing is hidden.
      this.audit.record({ ...signIn, outcome: "failure", actor: userActor(user), userId: user.id, userName: user.name, details: { reason: "email_unverified" } });
      throw new OAuthError("invalid_grant", "verify your email address first: follow the link in the mail we sent you");
    }
    this.audit.record({ ...signIn, outcome: "success", actor: userActor(user), userId: user.id, userName: user.name });
    return user;
  }

  /**
   * Whether `password` is the signed-in user's own, checked under the same
   * budgets as a sign-in (a wrong one is a failed sign-in of that name and
   * address): the account page's "current password". Refused (OAuthError)
   * while the name or address is locked.
   */
  async checkPassword(user: UserRecord, password: string, clientAddress?: string): Promise<boolean> {
    const found = await this.attempt(user.name, password, clientAddress);
    if (found?.id === user.id) return true;
    if (!found) this.metrics.loginFailure();
    return false;
  }

  private attempt(username: string, password: string, clientAddress: string | undefined): Promise<UserRecord | undefined> {
    return this.throttle.attempt(username, clientAddress, async () => {
      const found = await this.users.findByName(username);
      const matches = await this.checks.run(() => {
        // The costly step the throttle rations, counted where it runs.
        this.metrics.passwordChecked();
        return this.verify(password, found?.passwordHash ?? DUMMY_SECRET_HASH);
      });
      return found && matches && !found.disabled ? found : undefined;
    });
  }
}

/** A user named in a failed sign-in, who may not exist: no id, the name cut as the lockout cuts it. */
const namedUser = (name: string) => ({ kind: "user", id: "", name: name.slice(0, 64) }) as const;
