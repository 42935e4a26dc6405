import { lockForTransaction, type Db } from "./db.js";
import { guardUnique } from "./errors.js";
import type { UserFactorRecord } from "../shared/model.js";

interface FactorRow {
  id: string;
  user_id: string;
  type: string;
  name: string;
  secret: string | null;
  credential_id: string | null;
  public_key: string | null;
  counter: number | string;
  transports: string;
  confirmed: boolean | number;
  last_step: number | string;
  created_at: number | string;
  last_used_at: number | string | null;
}

const fromRow = (r: FactorRow): UserFactorRecord => ({
  id: r.id,
  userId: r.user_id,
  type: r.type as UserFactorRecord["type"],
  name: r.name,
  secret: r.secret,
  credentialId: r.credential_id,
  publicKey: r.public_key,
  counter: Number(r.counter),
  transports: r.transports ? r.transports.split(" ") : [],
  confirmed: Boolean(r.confirmed),
  createdAt: Number(r.created_at),
  lastUsedAt: r.last_used_at === null ? null : Number(r.last_used_at),
});

const toRow = (f: UserFactorRecord) => ({
  id: f.id,
  user_id: f.userId,
  type: f.type,
  name: f.name,
  secret: f.secret,
  credential_id: f.credentialId,
  public_key: f.publicKey,
  counter: f.counter,
  transports: f.transports.join(" "),
  confirmed: f.confirmed,
  created_at: f.createdAt,
  last_used_at: f.lastUsedAt,
});

/**
 * A user's second factors (one-time code secrets, passkeys) and recovery codes.
 *
 * The contract (test/store/userFactors.spec.ts, every backend):
 * - compare-and-set: acceptStep() is one conditional UPDATE, so of any
 *   number of concurrent callers presenting one TOTP step exactly one wins,
 *   and a step at or before the last accepted one never does;
 * - compare-and-set: acceptCounter() takes only a higher signature counter
 *   (or zero from an authenticator that keeps none);
 * - compare-and-set: useRecoveryCode() marks an unused code used, once;
 * - insertFirst() stores a factor only for a user with none: of concurrent callers for one user, one;
 * - replaceRecoveryCodes() voids the old set with the new one, in one transaction;
 * - remove() ends with the user's last factor its recovery codes, in one transaction;
 * - unique: a passkey's credential id;
 * - undefined: find() and findByCredentialId() of unknown ids.
 */
export class UserFactorRepository {
  constructor(private readonly db: Db) {}

  /** Throws ConflictError for a passkey whose credential id is registered already. */
  async insert(f: UserFactorRecord): Promise<void> {
    await guardUnique("user factor", "credential id", () => this.db("user_factors").insert(toRow(f)));
  }

  /**
   * Store `f` only while its user has no confirmed factor: true when stored.
   * Throws ConflictError as insert() does. SQLite's write transaction holds
   * the file from the check to the insert; on PostgreSQL these inserts of one
   * user take turns under a transaction's advisory lock, so each check sees
   * the factor an earlier one committed.
   */
  async insertFirst(f: UserFactorRecord): Promise<boolean> {
    return this.db.transaction(async (trx) => {
      await lockForTransaction(trx, `first-factor/${f.userId}`);
      if (await trx("user_factors").where({ user_id: f.userId, confirmed: true }).first("id")) return false;
      await guardUnique("user factor", "credential id", () => trx("user_factors").insert(toRow(f)));
      return true;
    });
  }

  /** The user's factors, oldest first; unconfirmed ones only with `withUnconfirmed`. */
  async list(userId: string, withUnconfirmed = false): Promise<UserFactorRecord[]> {
    const q = this.db<FactorRow>("user_factors").where({ user_id: userId }).orderBy([{ column: "created_at" }, { column: "id" }]);
    if (!withUnconfirmed) q.where({ confirmed: true });
    return (await q).map(fromRow);
  }

  async find(id: string): Promise<UserFactorRecord | undefined> {
    const r = await this.db<FactorRow>("user_factors").where({ id }).first();
    return r && fromRow(r);
  }

  async findByCredentialId(credentialId: string): Promise<UserFactorRecord | undefined> {
    const r = await this.db<FactorRow>("user_factors").where({ credential_id: credentialId, confirmed: true }).first();
    return r && fromRow(r);
  }

  /**
   * Accept TOTP time step `step` of a factor: true for exactly one caller,
   * and only if no step at or after it was accepted before (RFC 6238 §5.2:
   * a code is accepted once). `confirm` accepts it for an enrolment still
   * waiting for its first code, which it confirms; otherwise only for a confirmed factor.
   */
  async acceptStep(id: string, step: number, now: number, confirm = false): Promise<boolean> {
    const updated = await this.db("user_factors")
      .where({ id, confirmed: !confirm })
      .where("last_step", "<", step)
      .update({ last_step: step, last_used_at: now, confirmed: true });
    return updated === 1;
  }

  /**
   * Take a passkey's new signature counter (WebAuthn §6.1.1): only a higher
   * one, or zero again from an authenticator that keeps no counter; a
   * counter that goes back means a cloned authenticator, and is refused.
   */
  async acceptCounter(id: string, counter: number, now: number): Promise<boolean> {
    const updated = await this.db("user_factors")
      .where({ id, confirmed: true })
      .where("counter", counter === 0 ? "=" : "<", counter)
      .update({ counter, last_used_at: now });
    return updated === 1;
  }

  async rename(id: string, userId: string, name: string): Promise<boolean> {
    return (await this.db("user_factors").where({ id, user_id: userId }).update({ name })) === 1;
  }

  /** Drop enrolments that never got their first code. */
  async deleteUnconfirmed(userId: string): Promise<void> {
    await this.db("user_factors").where({ user_id: userId, confirmed: false }).delete();
  }

  /**
   * Remove one factor of the user; with the last confirmed one go the
   * recovery codes, which stand in for a factor the user no longer has.
   */
  async remove(id: string, userId: string): Promise<UserFactorRecord | undefined> {
    return this.db.transaction(async (trx) => {
      const r = await trx<FactorRow>("user_factors").where({ id, user_id: userId }).first();
      if (!r || (await trx("user_factors").where({ id }).delete()) !== 1) return undefined;
      const left = await trx("user_factors").where({ user_id: userId, confirmed: true }).first("id");
      if (!left) await trx("recovery_codes").where({ user_id: userId }).delete();
      return fromRow(r);
    });
  }

  /** Remove every factor and recovery code of the user (an admin's reset); returns the factors removed. */
  async removeAll(userId: string): Promise<number> {
    return this.db.transaction(async (trx) => {
      const removed = await trx("user_factors").where({ user_id: userId }).delete();
      await trx("recovery_codes").where({ user_id: userId }).delete();
      return removed;
    });
  }

  /** A new set of recovery codes, by hash; the old set is void in the same transaction. */
  async replaceRecoveryCodes(userId: string, codeHashes: readonly string[]): Promise<void> {
    await this.db.transaction(async (trx) => {
      await trx("recovery_codes").where({ user_id: userId }).delete();
      await trx("recovery_codes").insert(codeHashes.map((code_hash) => ({ user_id: userId, code_hash, used_at: null })));
    });
  }

  /** Mark an unused recovery code used: true for exactly one caller. */
  async useRecoveryCode(userId: string, codeHash: string, now: number): Promise<boolean> {
    return (await this.db("recovery_codes").where({ user_id: userId, code_hash: codeHash }).whereNull("used_at").update({ used_at: now })) === 1;
  }

  async recoveryCodesLeft(userId: string): Promise<number> {
    const [row] = await this.db("recovery_codes").where({ user_id: userId }).whereNull("used_at").count<{ n: number | string }[]>({ n: "*" });
    return Number(row?.n ?? 0);
  }
}

export interface WebAuthnChallengeRecord {
  challenge: string;
  /** The user a registration or second-factor check is for; null for a passkey sign-in, whose user is not known yet. */
  userId: string | null;
  purpose: "register" | "signin" | "factor";
  /** A hash of what asked for it (a pending sign-in, a browser session): only that may answer it. */
  binding: string;
  expiresAt: number;
}

/**
 * WebAuthn challenges. The contract (test/store/userFactors.spec.ts):
 * take() deletes the challenge, so exactly one of any number of callers gets
 * it, only with its binding, and an expired one is no challenge; insert()
 * voids the binding's earlier challenge, so each binding has one live.
 */
export class WebAuthnChallengeRepository {
  constructor(private readonly db: Db) {}

  async insert(c: WebAuthnChallengeRecord): Promise<void> {
    await this.db("webauthn_challenges").where({ binding: c.binding }).delete();
    await this.db("webauthn_challenges").insert({ challenge: c.challenge, user_id: c.userId, purpose: c.purpose, binding: c.binding, expires_at: c.expiresAt });
  }

  async take(challenge: string, binding: string, now: number): Promise<WebAuthnChallengeRecord | undefined> {
    const r = await this.db("webauthn_challenges").where({ challenge, binding }).first();
    // The DELETE decides: one caller removes the row, every other removes nothing.
    if (!r || (await this.db("webauthn_challenges").where({ challenge, binding }).delete()) !== 1) return undefined;
    if (Number(r.expires_at) <= now) return undefined;
    return { challenge: r.challenge, userId: r.user_id, purpose: r.purpose, binding: r.binding, expiresAt: Number(r.expires_at) };
  }
}
