import { userActor } from "../shared/audit.js";
import type { UserRecord } from "../shared/model.js";
import { hashSecret } from "../oauth/secrets.js";
import { OAuthError } from "../oauth/errors.js";
import type { OwnAccountRepository } from "../store/ownAccounts.js";
import { passwordChangedMail } from "./mails.js";
import { passwordProblem } from "./passwordRules.js";
import type { FieldErrors, SelfServiceDeps } from "./selfServiceDeps.js";

export type ChangeField = "current" | "password" | "passwordAgain";

export type ChangeResult = { kind: "changed" } | { kind: "invalid"; errors: FieldErrors<ChangeField> };

/** Where a change comes from: the browser session to keep (its cookie's hash), and the client address for the budgets. */
export interface ChangeContext {
  keepSession?: string;
  clientAddress?: string;
}

/**
 * A signed-in user changes their own password (issue #46 §5): the current
 * one is checked under the sign-in budgets (a wrong one counts as a failed
 * sign-in, and a locked name is refused), the new one under the rules of
 * sign-up and reset. On success the user's other sessions and every refresh
 * and access token end in the same transaction as the change; the session
 * it came from stays. Audited `password_changed`, and mailed about where mail is set up.
 */
export class PasswordChange {
  constructor(
    private readonly deps: SelfServiceDeps,
    private readonly accounts: Pick<OwnAccountRepository, "changePassword">,
    /** The sign-in check of a password (oauth/userAuth.ts): throws while locked. */
    private readonly checkPassword: (user: UserRecord, password: string, clientAddress?: string) => Promise<boolean>,
  ) {}

  async change(user: UserRecord, current: string, password: string, passwordAgain: string, context: ChangeContext = {}): Promise<ChangeResult> {
    const { deps } = this;
    const record = (outcome: "success" | "failure", reason?: string) =>
      deps.audit.record({ event: "password_changed", outcome, actor: userActor(user), userId: user.id, userName: user.name, clientAddress: context.clientAddress, ...(reason ? { details: { reason } } : {}) });
    if (!user.passwordHash) return { kind: "invalid", errors: { current: "This account has no password: it signs in through a provider." } };
    const errors: FieldErrors<ChangeField> = {};
    const problem = passwordProblem(password, user, deps.passwordMinLength);
    if (problem) errors.password = `The new password ${problem}.`;
    else if (password === current) errors.password = "The new password must differ from the current one.";
    if (passwordAgain !== password) errors.passwordAgain = "The two new passwords differ.";
    // The current password is checked even when the new one is refused: the form says everything at once, and a guess costs the same.
    try {
      if (!(await this.checkPassword(user, current, context.clientAddress))) errors.current = "That is not your current password.";
    } catch (err) {
      // Locked, as the login form would be: said next to the field.
      if (!(err instanceof OAuthError)) throw err;
      errors.current = `${err.description[0]!.toUpperCase()}${err.description.slice(1)}.`;
    }
    if (Object.keys(errors).length > 0) {
      record("failure", errors.current ? "wrong_password" : "invalid_password");
      return { kind: "invalid", errors };
    }
    const changed = await this.accounts.changePassword(user.id, user.passwordHash, await hashSecret(password, deps.hashCost), context.keepSession, deps.clock.now());
    if (!changed) {
      // Another change won meanwhile: this one's "current" password is no longer current.
      record("failure", "changed_meanwhile");
      return { kind: "invalid", errors: { current: "Your password was changed meanwhile: sign in again." } };
    }
    record("success");
    // The other sessions' logout tokens were queued with the change: send them now, not at the next poll.
    deps.sessionsEnded?.();
    if (user.email) void deps.mail?.enqueue({ ...passwordChangedMail(user.name, "account"), to: user.email, kind: "password_changed", user });
    return { kind: "changed" };
  }
}
