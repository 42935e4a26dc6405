import { userActor } from "../shared/audit.js";
import type { UserRecord } from "../shared/model.js";
import { OAuthError } from "../oauth/errors.js";
import { hashSecret } from "../oauth/secrets.js";
import type { TakenLink } from "../store/emailLinks.js";
import { passwordChangedMail, passwordResetMail } from "./mails.js";
import { passwordProblem } from "./passwordRules.js";
import { HOUR_MS, offThePath, type FieldErrors, type SelfServiceDeps } from "./selfServiceDeps.js";

/** Reset requests an hour (issue 47 §3): per account, beyond which no mail is sent; per address, beyond which 429. */
export const RESET_LIMITS = { perAccount: 5, perAddress: 20 };

export type ResetField = "password" | "passwordAgain";

export type ResetResult =
  | { kind: "refused"; reason: Exclude<TakenLink, { ok: true }>["reason"] }
  | { kind: "invalid"; errors: FieldErrors<ResetField>; userName: string }
  | { kind: "done"; userName: string; continueRequest: string | null };

/**
 * "Forgot password?" (issue 47 §3). Asking answers the same, in the same
 * time, whether or not an account matches: the address's budget is the one
 * decision taken on the request's path; finding the account and mailing it
 * happen after the answer. A new password ends every session and refresh
 * token, lifts the lockout, is mailed about and audited.
 */
export class PasswordReset {
  constructor(private readonly deps: SelfServiceDeps) {}

  async request(identifier: string, context: { clientAddress?: string; continueRequest?: string }): Promise<void> {
    const { deps } = this;
    if (!deps.mail) throw new OAuthError("request_not_supported", "password reset by mail is not offered here", 404);
    if (!(await deps.limits.take(`reset-ip:${context.clientAddress ?? "unknown"}`, RESET_LIMITS.perAddress, deps.clock.now(), HOUR_MS))) {
      throw new OAuthError("temporarily_unavailable", "too many reset requests from this address; try again later", 429);
    }
    offThePath(deps, "password reset not mailed", () => this.mailLinks(identifier.trim(), context.continueRequest));
  }

  /** Mail a reset link to each account the name or email names, within each account's budget. */
  private async mailLinks(identifier: string, continueRequest: string | undefined): Promise<void> {
    const { deps } = this;
    if (!identifier || identifier.length > 320) return;
    const byName = await deps.users.findByName(identifier);
    const byEmail = identifier.includes("@") ? await deps.users.findByEmail(identifier) : [];
    const accounts = new Map<string, UserRecord>([...(byName ? [byName] : []), ...byEmail].map((u) => [u.id, u]));
    for (const user of accounts.values()) {
      if (!user.email || user.disabled) continue;
      if (!(await deps.limits.take(`reset-user:${user.id}`, RESET_LIMITS.perAccount, deps.clock.now(), HOUR_MS))) {
        deps.logger.warn("password reset not mailed: the account's hourly budget is spent", { userName: user.name });
        continue;
      }
      const url = await deps.links.issue(user, "reset", continueRequest);
      void deps.mail!.enqueue({ ...passwordResetMail(user.name, url, deps.links.ttlSeconds), to: user.email, kind: "password_reset", user });
    }
  }

  /** Whether a reset link is live, for its form; and whose it is. Nothing is changed. */
  async check(token: string | undefined): Promise<{ ok: true; userName: string } | { ok: false; reason: Exclude<TakenLink, { ok: true }>["reason"] }> {
    const checked = await this.deps.links.check(token, "reset");
    if (!checked.ok) return checked;
    const user = await this.deps.users.findById(checked.link.userId);
    return user ? { ok: true, userName: user.name } : { ok: false, reason: "unknown" };
  }

  /** Set the new password through a live link: the link is taken and the password set in one transaction. */
  async complete(token: string | undefined, password: string, passwordAgain: string, clientAddress?: string): Promise<ResetResult> {
    const { deps } = this;
    const checked = await deps.links.check(token, "reset");
    if (!checked.ok) return { kind: "refused", reason: checked.reason };
    const user = await deps.users.findById(checked.link.userId);
    if (!user) return { kind: "refused", reason: "unknown" };
    const errors: FieldErrors<ResetField> = {};
    const problem = passwordProblem(password, user, deps.passwordMinLength);
    if (problem) errors.password = `The password ${problem}.`;
    if (passwordAgain !== password) errors.passwordAgain = "The two passwords differ.";
    if (Object.keys(errors).length > 0) return { kind: "invalid", errors, userName: user.name };
    const taken = await deps.links.resetPassword(token, await hashSecret(password, deps.hashCost));
    if (!taken.ok) return { kind: "refused", reason: taken.reason };
    deps.sessionsEnded?.();
    await deps.clearLockout(user.name);
    deps.audit.record({ event: "password_reset", outcome: "success", actor: userActor(user), userId: user.id, userName: user.name, clientAddress });
    void deps.mail?.enqueue({ ...passwordChangedMail(user.name), to: user.email, kind: "password_changed", user });
    return { kind: "done", userName: user.name, continueRequest: taken.link.continueRequest };
  }
}
