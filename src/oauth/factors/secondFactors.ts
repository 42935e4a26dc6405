import { randomUUID } from "node:crypto";
import type { Clock } from "../../shared/clock.js";
import type { UserFactorRepository } from "../../store/userFactors.js";
import type { SecretBox } from "../../federation/secretBox.js";
import type { LoginThrottle } from "../loginThrottle.js";
import { userActor, type AuditActor, type AuditTrail } from "../../shared/audit.js";
import type { UserFactorRecord, UserRecord } from "../../shared/model.js";
import { newTotpSecret, totpStep, totpUri } from "./totp.js";
import { looksLikeRecoveryCode, newRecoveryCodes, recoveryCodeHash } from "./recoveryCodes.js";

/** A second factor the user just proved: its RFC 8176 values, and which factor (none for a recovery code). */
export interface FactorProof {
  amr: string[];
  factorId?: string;
}

/** A one-time code enrolment waiting for its first code: shown to the user once. */
export interface TotpEnrolment {
  factorId: string;
  secret: string;
  /** The `otpauth://` URI, for the QR code. */
  uri: string;
}

const MAX_NAME = 100;

/**
 * One-time codes (RFC 6238) and recovery codes: enrolment, checks and
 * removal. Every code check runs under the password's failure budget
 * (LoginThrottle, atomic in the store), so wrong codes lock the user name as
 * wrong passwords do; a code is accepted once (UserFactorRepository.acceptStep).
 */
export class SecondFactors {
  constructor(
    private readonly factors: UserFactorRepository,
    private readonly clock: Clock,
    private readonly box: SecretBox,
    private readonly throttle: LoginThrottle,
    private readonly audit: AuditTrail,
    /** The issuer's host: the `issuer` of the otpauth URI. */
    private readonly issuerHost: string,
  ) {}

  /** The user's confirmed factors, oldest first. */
  list(userId: string): Promise<UserFactorRecord[]> {
    return this.factors.list(userId);
  }

  async has(userId: string): Promise<boolean> {
    return (await this.factors.list(userId)).length > 0;
  }

  /** Whether a factor still exists for its user (a session that used a removed one lost its second factor). */
  async stillEnrolled(factorId: string, userId: string): Promise<boolean> {
    const factor = await this.factors.find(factorId);
    return factor?.userId === userId && factor.confirmed;
  }

  recoveryCodesLeft(userId: string): Promise<number> {
    return this.factors.recoveryCodesLeft(userId);
  }

  /** A new secret, stored unconfirmed (sealed with --secret-key when set); an earlier unconfirmed one goes. */
  async beginTotp(user: UserRecord): Promise<TotpEnrolment> {
    await this.factors.deleteUnconfirmed(user.id);
    const factorId = randomUUID();
    const secret = newTotpSecret();
    await this.factors.insert({
      id: factorId,
      userId: user.id,
      type: "totp",
      name: "Authenticator app",
      secret: this.box.seal(secret, sealContext(factorId)),
      credentialId: null,
      publicKey: null,
      counter: 0,
      transports: [],
      confirmed: false,
      createdAt: this.clock.now(),
      lastUsedAt: null,
    });
    return { factorId, secret, uri: totpUri(secret, this.issuerHost, user.name) };
  }

  /** An enrolment still waiting for its first code, shown again after a wrong one. */
  async resumeTotp(user: UserRecord, factorId: string): Promise<TotpEnrolment | undefined> {
    const factor = await this.factors.find(factorId);
    if (!factor || factor.userId !== user.id || factor.confirmed || factor.type !== "totp") return undefined;
    const secret = this.secretOf(factor);
    return { factorId, secret, uri: totpUri(secret, this.issuerHost, user.name) };
  }

  /**
   * Enrolment ends only with a valid code of the new secret. Returns the
   * recovery codes to show when this is the user's first factor, an empty
   * list for a later one, or undefined for a wrong code.
   */
  async confirmTotp(user: UserRecord, factorId: string, code: string, clientAddress?: string): Promise<string[] | undefined> {
    const hadFactor = await this.has(user.id);
    const confirmed = await this.throttle.attempt(user.name, clientAddress, async () => {
      const factor = await this.factors.find(factorId);
      if (!factor || factor.userId !== user.id || factor.confirmed || factor.type !== "totp") return undefined;
      const step = totpStep(this.secretOf(factor), code, this.clock.now());
      return step !== undefined && (await this.factors.acceptStep(factor.id, step, this.clock.now(), true)) ? factor : undefined;
    });
    if (!confirmed) {
      this.record(user, "factor_enrolled", "failure", { type: "totp", reason: "invalid_code" }, clientAddress);
      return undefined;
    }
    this.record(user, "factor_enrolled", "success", { type: "totp", factorId }, clientAddress);
    return hadFactor ? [] : this.newRecoveryCodes(user);
  }

  /**
   * Check a one-time code, or a recovery code, as a second factor. Either
   * is accepted once; a wrong or replayed one is a failure of the budget.
   */
  async verify(user: UserRecord, code: string, clientAddress?: string): Promise<FactorProof | undefined> {
    const recovery = looksLikeRecoveryCode(code);
    const proof = await this.throttle.attempt(user.name, clientAddress, () => (recovery ? this.useRecoveryCode(user, code) : this.useTotp(user, code)));
    if (recovery && proof) this.record(user, "recovery_code_used", "success", { left: await this.recoveryCodesLeft(user.id) }, clientAddress);
    else this.record(user, "factor_used", proof ? "success" : "failure", { type: recovery ? "recovery_code" : "totp", ...(proof ? {} : { reason: "invalid_code" }) }, clientAddress);
    return proof;
  }

  private async useTotp(user: UserRecord, code: string): Promise<FactorProof | undefined> {
    const now = this.clock.now();
    for (const factor of await this.factors.list(user.id)) {
      if (factor.type !== "totp") continue;
      const step = totpStep(this.secretOf(factor), code, now);
      // RFC 6238 §5.2: the step is taken once, atomically; a replay finds it taken.
      if (step !== undefined && (await this.factors.acceptStep(factor.id, step, now))) return { amr: ["otp"], factorId: factor.id };
    }
    return undefined;
  }

  /** A recovery code is a one-time password the user keeps on paper: RFC 8176 `otp`. */
  private async useRecoveryCode(user: UserRecord, code: string): Promise<FactorProof | undefined> {
    return (await this.factors.useRecoveryCode(user.id, recoveryCodeHash(code), this.clock.now())) ? { amr: ["otp"] } : undefined;
  }

  /** Ten new recovery codes, shown once; the old set is void. */
  async newRecoveryCodes(user: UserRecord): Promise<string[]> {
    const codes = newRecoveryCodes();
    await this.factors.replaceRecoveryCodes(user.id, codes.map(recoveryCodeHash));
    return codes;
  }

  async rename(user: UserRecord, factorId: string, name: string): Promise<boolean> {
    const trimmed = name.trim().slice(0, MAX_NAME);
    return trimmed !== "" && this.factors.rename(factorId, user.id, trimmed);
  }

  /** Remove one of the user's factors (a passkey's audit event is `passkey_removed`); `actor` is the user or an admin. */
  async remove(user: UserRecord, factorId: string, actor: AuditActor = userActor(user)): Promise<boolean> {
    const removed = await this.factors.remove(factorId, user.id);
    if (!removed) return false;
    const event = removed.type === "passkey" ? "passkey_removed" : "factor_removed";
    this.audit.record({ event, outcome: "success", actor, userId: user.id, userName: user.name, details: { type: removed.type, factorId } });
    return true;
  }

  /** An admin's reset: every factor and recovery code goes; returns how many factors. */
  async removeAll(user: UserRecord, actor: AuditActor): Promise<number> {
    const removed = await this.factors.removeAll(user.id);
    this.audit.record({ event: "factor_removed", outcome: "success", actor, userId: user.id, userName: user.name, details: { all: true, removed } });
    return removed;
  }

  private secretOf(factor: UserFactorRecord): string {
    return this.box.open(factor.secret ?? "", sealContext(factor.id));
  }

  private record(user: UserRecord, event: "factor_enrolled" | "factor_used" | "recovery_code_used", outcome: "success" | "failure", details: Record<string, unknown>, clientAddress?: string): void {
    this.audit.record({ event, outcome, actor: userActor(user), userId: user.id, userName: user.name, clientAddress, details });
  }
}

/** A sealed secret opens only on its own factor's row. */
const sealContext = (factorId: string) => `totp:${factorId}`;
