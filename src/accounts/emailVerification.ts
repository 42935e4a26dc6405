import { userActor } from "../shared/audit.js";
import { echo, OAuthError } from "../oauth/errors.js";
import type { TakenLink } from "../store/emailLinks.js";
import { verifyEmailMail } from "./mails.js";
import type { SelfServiceDeps } from "./selfServiceDeps.js";

export type VerifyResult =
  | { kind: "refused"; reason: Exclude<TakenLink, { ok: true }>["reason"] }
  /** `verified` is false when the user's address changed after the mail: the link verifies only the address it went to. */
  | { kind: "done"; verified: boolean; continueRequest: string | null };

/**
 * Email verification (issue 47 §2, §4): the mail an admin sends (console,
 * RPC, CLI) or the account page offers, and the link's landing. The link
 * verifies the address it was mailed to, once; it signs nobody in.
 */
export class EmailVerification {
  constructor(private readonly deps: SelfServiceDeps) {}

  /**
   * Mail a verification link to the user's current address. Resolves once
   * queued; `delivered` resolves once the mail is sent (true) or given up.
   */
  async send(name: string, continueRequest?: string): Promise<{ delivered: Promise<boolean> }> {
    const { deps } = this;
    if (!deps.mail) throw new OAuthError("request_not_supported", "mail is not configured: set --smtp-url and --mail-from");
    const user = await deps.users.findByName(name);
    if (!user) throw new OAuthError("not_found", `no user named ${echo(name)}`);
    if (!user.email) throw new OAuthError("invalid_request", `${echo(name)} has no email address`);
    if (user.emailVerified) throw new OAuthError("invalid_request", `the email of ${echo(name)} is already verified`);
    const url = await deps.links.issue(user, "verify", continueRequest);
    return { delivered: deps.mail.enqueue({ ...verifyEmailMail(user.name, url, deps.links.ttlSeconds), to: user.email, kind: "verify_email", user }) };
  }

  /** Whether a verification link is live, for its page. Nothing is changed. */
  async check(token: string | undefined): Promise<TakenLink> {
    return this.deps.links.check(token, "verify");
  }

  async verify(token: string | undefined, clientAddress?: string): Promise<VerifyResult> {
    const { deps } = this;
    const taken = await deps.links.verifyEmail(token);
    if (!taken.ok) return { kind: "refused", reason: taken.reason };
    const user = await deps.users.findById(taken.link.userId);
    if (user && taken.verified) {
      deps.audit.record({ event: "email_verified", outcome: "success", actor: userActor(user), userId: user.id, userName: user.name, clientAddress });
    }
    return { kind: "done", verified: !!taken.verified, continueRequest: taken.link.continueRequest };
  }
}
