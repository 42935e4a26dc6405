import type { UserRepository } from "../../store/users.js";
import type { SessionRecord } from "../../store/sessions.js";
import type { AuthorizeRequest } from "../authorizeRequest.js";
import type { SecondFactors } from "./secondFactors.js";
import { parseAmr, withoutSecondFactor } from "./amr.js";
import { userActor, type AuditTrail } from "../../shared/audit.js";
import type { ApplicationRecord, UserRecord } from "../../shared/model.js";

/** What a sign-in needs after its first factor: nothing more, the user's second factor, or enrolling one. */
export type NextStep = "done" | "verify" | "enrol";

/** Whether the request asks for a second factor itself (OIDC Core §3.1.2.1 acr_values). */
export const asksForMfa = (request: AuthorizeRequest): boolean => request.acrValues?.includes("mfa") ?? false;

/**
 * The second-factor policy of a sign-in (issue #46 §4): an application's
 * `mfa` (optional asks users who have a factor for it; required makes the
 * others enrol one), and `acr_values=mfa`, which asks for one whatever the
 * application's policy.
 */
export class SignInPolicy {
  constructor(
    private readonly factors: SecondFactors,
    private readonly users: UserRepository,
    private readonly audit: AuditTrail,
  ) {}

  /** What a user who has just passed a first factor must do next. */
  async next(app: ApplicationRecord, request: AuthorizeRequest, userId: string): Promise<NextStep> {
    if (await this.factors.has(userId)) return "verify";
    return app.mfa === "required" || asksForMfa(request) ? "enrol" : "done";
  }

  /**
   * What a session's sign-in still proves, and whether that answers the
   * request. A second factor removed since no longer counts.
   */
  async sessionProof(app: ApplicationRecord, request: AuthorizeRequest, session: SessionRecord): Promise<{ ok: boolean; amr: string[] }> {
    let amr = session.amr === undefined ? ["pwd"] : parseAmr(session.amr);
    if (session.factorId ? !(await this.factors.stillEnrolled(session.factorId, session.userId)) : amr.includes("mfa") && !(await this.factors.has(session.userId))) {
      // A recovery code names no factor: it stands for the user's factors, and is void once the last one is gone.
      amr = withoutSecondFactor(amr);
    }
    const demanded = app.mfa === "required" || asksForMfa(request);
    return { ok: !demanded || amr.includes("mfa"), amr };
  }

  /** Audit a signed-in user being asked for a (fresh) second factor. */
  stepUpRequested(user: UserRecord, app: ApplicationRecord, request: AuthorizeRequest, clientAddress?: string): void {
    const reason = asksForMfa(request) ? "acr_values" : "policy";
    this.audit.record({ event: "step_up_requested", outcome: "success", actor: userActor(user), userId: user.id, userName: user.name, clientId: app.clientId, clientAddress, details: { reason } });
  }

  /** The enabled user a pending sign-in step names. */
  async user(userId: string): Promise<UserRecord | undefined> {
    const user = await this.users.findById(userId);
    return user && !user.disabled ? user : undefined;
  }
}
