import { userActor, type AuditTrail } from "../shared/audit.js";
import type { Clock } from "../shared/clock.js";
import type { SecondFactors } from "../oauth/factors/secondFactors.js";
import type { Store } from "../store/index.js";
import type { UnlinkOutcome } from "../store/ownAccounts.js";
import type { ExternalIdType, FederatedIdentityRecord, UserFactorRecord, UserRecord } from "../shared/model.js";
import { sessionHandle } from "./userSessions.js";

/** One of the user's browser sessions as the account page shows it: a handle, never its cookie or hash. */
export interface OwnSession {
  id: string;
  createdAt: number;
  /** Epoch seconds of its sign-in. */
  authTime: number;
  expiresAt: number;
  /** The browser asking. */
  current: boolean;
}

export type FactorRemoval =
  | { kind: "removed"; factor: UserFactorRecord }
  | { kind: "confirm"; factor: UserFactorRecord; applications: string[] }
  | { kind: "not_found" };

/**
 * What a signed-in user sees and ends of their own account (issue #46 §5):
 * sessions, linked providers, and second factors. Every call is scoped to
 * the user passed in, which the door takes from the session (or token)
 * alone; nothing here reaches another user's rows.
 */
export class OwnAccount {
  constructor(
    private readonly store: Pick<Store, "userSignIns" | "ownAccounts" | "federatedIdentities">,
    private readonly factors: SecondFactors,
    private readonly clock: Clock,
    private readonly audit: AuditTrail,
  ) {}

  /** Live sessions, newest first; `currentIdHash` marks the caller's own. */
  async sessions(user: UserRecord, currentIdHash?: string): Promise<OwnSession[]> {
    const sessions = await this.store.userSignIns.sessions(user.id, this.clock.now());
    return sessions.map((s) => ({ id: sessionHandle(s.idHash), createdAt: s.createdAt, authTime: s.authTime, expiresAt: s.expiresAt, current: s.idHash === currentIdHash }));
  }

  /** End one of the user's sessions by its handle; false when the user has no such session. */
  async endSession(user: UserRecord, id: string, clientAddress?: string): Promise<boolean> {
    const session = (await this.store.userSignIns.sessions(user.id, this.clock.now())).find((s) => sessionHandle(s.idHash) === id);
    if (!session || !(await this.store.userSignIns.endSession(user.id, session.idHash, this.clock.now()))) return false;
    this.audit.record({ event: "sessions_revoked", outcome: "success", actor: userActor(user), userId: user.id, userName: user.name, clientAddress, details: { sessions: 1, refreshTokens: 0 } });
    return true;
  }

  links(user: UserRecord): Promise<FederatedIdentityRecord[]> {
    return this.store.federatedIdentities.listByUser(user.id);
  }

  /** Unlink an external account; refused when it is the last way a user without a password or passkey signs in. */
  unlink(user: UserRecord, provider: string, externalIdType: string, externalId: string): Promise<UnlinkOutcome> {
    return this.store.ownAccounts.unlink(user.id, { provider, externalIdType: externalIdType as ExternalIdType, externalId });
  }

  /** The `mfa: required` applications the user has signed in to. */
  requiredMfaApplications(user: UserRecord): Promise<string[]> {
    return this.store.ownAccounts.requiredMfaApplications(user.id);
  }

  /**
   * Remove one of the user's factors. The last one, for a user who signs in
   * to a `required` application, only once `confirmed`: until then the
   * answer names those applications.
   */
  async removeFactor(user: UserRecord, factorId: string, confirmed: boolean): Promise<FactorRemoval> {
    const factors = await this.factors.list(user.id);
    const factor = factors.find((f) => f.id === factorId);
    if (!factor) return { kind: "not_found" };
    if (factors.length === 1 && !confirmed) {
      const applications = await this.requiredMfaApplications(user);
      if (applications.length > 0) return { kind: "confirm", factor, applications };
    }
    return (await this.factors.remove(user, factorId)) ? { kind: "removed", factor } : { kind: "not_found" };
  }
}
