import type { AuditTrail } from "../shared/audit.js";
import type { Clock } from "../shared/clock.js";
import type { Logger } from "../shared/log.js";
import type { ScryptCost } from "../oauth/secrets.js";
import type { ActionLimitRepository } from "../store/actionLimits.js";
import type { UserRepository } from "../store/users.js";
import type { EmailLinks } from "./emailLinks.js";
import type { MailQueue } from "./mailer.js";

/** What sign-up, password reset and email verification share. */
export interface SelfServiceDeps {
  users: UserRepository;
  limits: ActionLimitRepository;
  links: EmailLinks;
  /** Undefined without --smtp-url: nothing that needs mail is offered. */
  mail?: MailQueue;
  clock: Clock;
  audit: AuditTrail;
  logger: Logger;
  hashCost: ScryptCost;
  passwordMinLength: number;
  signupMaxPerHour: number;
  /** Lift the lockout of a user name (oauth/loginThrottle.ts). */
  clearLockout(name: string): Promise<void>;
  /** Told after a store write ended a user's sessions: their back-channel logouts go out now (oauth/sessionEnds.ts). */
  sessionsEnded?(): void;
  /** Work begun off the request's path, so a caller (a test, a shutdown) can wait for it. */
  background: Set<Promise<unknown>>;
}

export const HOUR_MS = 3_600_000;

/** Run work off the request's path: its answer and timing do not depend on it, and a failure is logged, never thrown. */
export function offThePath(deps: SelfServiceDeps, what: string, work: () => Promise<void>): void {
  const running: Promise<void> = work()
    .catch((err: unknown) => deps.logger.error(what, { error: (err as Error).message }))
    .finally(() => deps.background.delete(running));
  deps.background.add(running);
}

/** The per-field errors of a self-service form: each field's own sentence. */
export type FieldErrors<F extends string> = Partial<Record<F, string>>;
