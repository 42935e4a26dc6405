import type { AuditTrail } from "../shared/audit.js";
import type { Clock } from "../shared/clock.js";
import type { Logger } from "../shared/log.js";
import type { ScryptCost } from "../oauth/secrets.js";
import type { ActionLimitRepository } from "../store/actionLimits.js";
import type { EmailLinkRepository } from "../store/emailLinks.js";
import type { UserRepository } from "../store/users.js";
import { EmailLinks } from "./emailLinks.js";
import { EmailVerification } from "./emailVerification.js";
import { DEFAULT_MAIL_POLICY, MailQueue, smtpSender, type MailPolicy, type SendAttempt } from "./mailer.js";
import { PasswordReset } from "./passwordReset.js";
import { PasswordChange } from "./passwordChange.js";
import type { OwnAccountRepository } from "../store/ownAccounts.js";
import type { UserRecord } from "../shared/model.js";
import { DEFAULT_PASSWORD_MIN_LENGTH } from "./passwordRules.js";
import type { SelfServiceDeps } from "./selfServiceDeps.js";
import { SignUp } from "./signUp.js";

/** --email-link-ttl-seconds and --signup-max-per-hour when unset. */
export const SELF_SERVICE_DEFAULTS = { emailLinkTtlSeconds: 3600, signupMaxPerHour: 10, passwordMinLength: DEFAULT_PASSWORD_MIN_LENGTH };

/** The mail settings: --smtp-url (a secret: it may hold a password) and --mail-from. */
export interface MailSettings {
  smtpUrl: string;
  from: string;
  /** Replaces the SMTP attempt (tests of failures); the policy too. */
  send?: SendAttempt;
  policy?: MailPolicy;
}

export interface SelfServiceOptions {
  mail?: MailSettings;
  passwordMinLength?: number;
  emailLinkTtlSeconds?: number;
  signupMaxPerHour?: number;
}

/** Sign-up, password reset and email verification (issue 47), as the doors call them. */
export interface SelfService {
  /** Whether mail is configured: without it no reset link and no verification step are offered. */
  mailConfigured: boolean;
  passwordMinLength: number;
  signUp: SignUp;
  passwordReset: PasswordReset;
  /** A signed-in user's change of their own password (the account page, AccountService). */
  passwordChange: PasswordChange;
  emailVerification: EmailVerification;
  /** Resolves once the work begun off the requests' path, and every queued mail, is done. */
  drain(): Promise<void>;
}

export interface SelfServiceStores {
  users: UserRepository;
  emailLinks: EmailLinkRepository;
  actionLimits: ActionLimitRepository;
  ownAccounts: OwnAccountRepository;
}

export function createSelfService(
  stores: SelfServiceStores,
  context: { issuer: string; clock: Clock; audit: AuditTrail; logger: Logger; hashCost: ScryptCost; clearLockout(name: string): Promise<void>; checkPassword(user: UserRecord, password: string, clientAddress?: string): Promise<boolean>; sessionsEnded?(): void },
  options: SelfServiceOptions = {},
): SelfService {
  const mail = options.mail
    ? new MailQueue(options.mail.send ?? smtpSender(options.mail.smtpUrl), options.mail.from, context.logger, context.audit, options.mail.policy ?? DEFAULT_MAIL_POLICY)
    : undefined;
  const deps: SelfServiceDeps = {
    users: stores.users,
    limits: stores.actionLimits,
    links: new EmailLinks(stores.emailLinks, context.clock, context.issuer, options.emailLinkTtlSeconds ?? SELF_SERVICE_DEFAULTS.emailLinkTtlSeconds),
    mail,
    clock: context.clock,
    audit: context.audit,
    logger: context.logger,
    hashCost: context.hashCost,
    passwordMinLength: options.passwordMinLength ?? SELF_SERVICE_DEFAULTS.passwordMinLength,
    signupMaxPerHour: options.signupMaxPerHour ?? SELF_SERVICE_DEFAULTS.signupMaxPerHour,
    clearLockout: context.clearLockout,
    sessionsEnded: context.sessionsEnded,
    background: new Set(),
  };
  return {
    mailConfigured: mail !== undefined,
    passwordMinLength: deps.passwordMinLength,
    signUp: new SignUp(deps),
    passwordReset: new PasswordReset(deps),
    passwordChange: new PasswordChange(deps, stores.ownAccounts, context.checkPassword),
    emailVerification: new EmailVerification(deps),
    async drain() {
      while (deps.background.size > 0) await Promise.all([...deps.background]);
      await mail?.drain();
    },
  };
}
