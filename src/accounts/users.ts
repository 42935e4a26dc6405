import { randomUUID } from "node:crypto";
import { noAudit, recordAdminChange, type AuditEventName, type AuditTrail } from "../shared/audit.js";
import type { Clock } from "../shared/clock.js";
import { echo, OAuthError } from "../oauth/errors.js";
import { hashSecret, SCRYPT_COST, verifySecret, type ScryptCost } from "../oauth/secrets.js";
import type { UserRepository } from "../store/users.js";
import { conflictsAsErrors, FieldChecks, InvalidInputError, optionalBoolean, optionalString, rejectUnknownFields, requireName } from "./validation.js";
import type { UserRecord } from "../shared/model.js";

export const USER_FIELDS = [
  "name", "password", "displayName", "email", "emailVerified", "avatar", "phone", "address", "isAdmin", "disabled",
] as const;

/** Never in an audit event's diff: only named when it changed. */
const USER_SECRETS = ["passwordHash"];

/** Writable user fields; absent ones are left alone. */
export interface UserInput {
  name: string;
  password?: string;
  displayName?: string;
  email?: string;
  emailVerified?: boolean;
  avatar?: string;
  phone?: string;
  address?: string;
  isAdmin?: boolean;
  disabled?: boolean;
}

export function parseUserInput(raw: Record<string, unknown>): UserInput {
  const checks = new FieldChecks();
  const check = <T>(run: () => T) => checks.check(run);
  check(() => rejectUnknownFields(raw, USER_FIELDS));
  const input = {
    name: check(() => requireName(raw.name)),
    password: check(() => {
      const password = optionalString(raw.password, "password", 1000);
      if (password === "") throw new InvalidInputError("password", "must not be empty");
      return password;
    }),
    displayName: check(() => optionalString(raw.displayName, "displayName", 200)),
    email: check(() => {
      const email = optionalString(raw.email, "email", 320);
      if (email && !/^[^\s@]+@[^\s@]+$/.test(email)) throw new InvalidInputError("email", "is not an email address");
      return email;
    }),
    emailVerified: check(() => optionalBoolean(raw.emailVerified, "emailVerified")),
    avatar: check(() => optionalString(raw.avatar, "avatar", 2000)),
    phone: check(() => optionalString(raw.phone, "phone", 50)),
    address: check(() => optionalString(raw.address, "address", 1000)),
    isAdmin: check(() => optionalBoolean(raw.isAdmin, "isAdmin")),
    disabled: check(() => optionalBoolean(raw.disabled, "disabled")),
  };
  checks.done();
  return input as UserInput;
}

/** User management shared by the config file, the CLI and the admin RPCs. */
export class UserAdmin {
  constructor(
    private readonly repo: UserRepository,
    private readonly clock: Clock,
    private readonly hashCost: ScryptCost = SCRYPT_COST,
    private readonly audit: AuditTrail = noAudit,
    /** Told after a change ended the user's sessions: their back-channel logouts go out now (oauth/sessionEnds.ts). */
    private readonly sessionsEnded: () => void = () => {},
  ) {}

  async create(input: UserInput): Promise<UserRecord> {
    const now = this.clock.now();
    const user: UserRecord = {
      id: randomUUID(),
      name: input.name,
      passwordHash: input.password ? await hashSecret(input.password, this.hashCost) : null,
      displayName: input.displayName ?? "",
      email: input.email ?? "",
      emailVerified: input.emailVerified ?? false,
      avatar: input.avatar ?? "",
      phone: input.phone ?? "",
      address: input.address ?? "",
      isAdmin: input.isAdmin ?? false,
      disabled: input.disabled ?? false,
      properties: {},
      createdAt: now,
      updatedAt: now,
    };
    await conflictsAsErrors(() => this.repo.insert(user));
    this.recordChange("user_created", user, undefined, user);
    return user;
  }

  /**
   * A new password, or disabling, ends the user's refresh and access tokens
   * and browser sessions, in the same transaction as the change.
   * Re-setting the current password (a config file applied again) changes
   * nothing.
   */
  async update(input: UserInput): Promise<UserRecord> {
    const current = await this.get(input.name);
    const user: UserRecord = {
      ...current,
      passwordHash: input.password ? await this.rehash(current, input.password) : current.passwordHash,
      displayName: input.displayName ?? current.displayName,
      email: input.email ?? current.email,
      // A new address is unverified until its owner proves it (issue 47 §4), unless the same change says otherwise.
      emailVerified: input.emailVerified ?? (input.email !== undefined && input.email !== current.email ? false : current.emailVerified),
      avatar: input.avatar ?? current.avatar,
      phone: input.phone ?? current.phone,
      address: input.address ?? current.address,
      isAdmin: input.isAdmin ?? current.isAdmin,
      disabled: input.disabled ?? current.disabled,
      updatedAt: this.clock.now(),
    };
    const disabling = user.disabled && !current.disabled;
    const passwordChanged = user.passwordHash !== current.passwordHash;
    const ends = disabling || passwordChanged ? { at: user.updatedAt, reason: disabling ? ("user_disabled" as const) : ("password_changed" as const) } : undefined;
    // Only what this update changed is written: a demotion or disabling since our read stays.
    await conflictsAsErrors(() => this.repo.update(user, ends, current));
    if (ends) this.sessionsEnded();
    // The password is its own event, without its hash; the other fields are the update's diff.
    if (passwordChanged) this.recordChange("password_set", user, undefined, undefined);
    this.recordChange("user_updated", user, { ...current, passwordHash: null }, { ...user, passwordHash: null });
    return user;
  }

  async upsert(input: UserInput): Promise<UserRecord> {
    return (await this.repo.findByName(input.name)) ? this.update(input) : this.create(input);
  }

  async get(name: string): Promise<UserRecord> {
    const user = await this.repo.findByName(name);
    if (!user) throw new OAuthError("not_found", `no user named ${echo(name)}`);
    return user;
  }

  list(): Promise<UserRecord[]> {
    return this.repo.list();
  }

  async delete(name: string): Promise<void> {
    const current = await this.repo.findByName(name);
    if (!current || !(await this.repo.deleteByName(name, this.clock.now()))) throw new OAuthError("not_found", `no user named ${echo(name)}`);
    this.sessionsEnded();
    this.recordChange("user_deleted", current, current, undefined);
  }

  private recordChange(event: AuditEventName, user: UserRecord, before: UserRecord | undefined, after: UserRecord | undefined): void {
    // Properties are what providers linked in, not an admin's input: out of the diff.
    const shown = (u: UserRecord | undefined) => u && { ...u, properties: undefined };
    recordAdminChange(this.audit, event, { name: user.name, userId: user.id, userName: user.name }, shown(before), shown(after), USER_SECRETS);
  }

  // An unchanged password from a re-applied config file keeps its hash.
  private async rehash(current: UserRecord, password: string): Promise<string> {
    if (current.passwordHash && (await verifySecret(password, current.passwordHash))) return current.passwordHash;
    return hashSecret(password, this.hashCost);
  }

}
