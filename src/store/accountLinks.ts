import type { Db } from "./db.js";
import type { ExternalKey, FederatedIdentityRepository } from "./federatedIdentities.js";
import type { UserRepository } from "./users.js";
import type { FederatedIdentityRecord, UserRecord } from "../shared/model.js";

/** What a federated sign-in asks of the store: find or make the local user of an external account. */
export interface AccountLinkRequest {
  key: ExternalKey;
  /** The user name at the provider, noted on the link. */
  username: string;
  at: number;
  /**
   * A verified email the provider is trusted with: it selects an existing
   * user only when exactly one non-admin user has it, verified.
   */
  trustedEmail?: string;
  /** The user to create when neither the link nor the email finds one; its name is added here. */
  newUser: Omit<UserRecord, "name">;
  /** Names for a new user, best first; the first one free is taken, else `fallbackName`. */
  names: readonly string[];
  fallbackName: string;
}

export interface AccountLink {
  user: UserRecord;
  identity: FederatedIdentityRecord;
  /** Whether this call created the user. */
  created: boolean;
}

/**
 * Linking of external accounts to local users: the user and the link are
 * read and written in one transaction.
 *
 * The contract (test/store/contract/federation.spec.ts, every backend, "account links"):
 * - a known account gets its linked user, and the link notes the current
 *   provider user name;
 * - a disabled user is returned as found and nothing is written, so the
 *   caller can refuse it with no trace;
 * - a trusted email selects exactly one non-admin user who verified it;
 *   ambiguity and administrators never match;
 * - otherwise a new user under the first free name, and its link;
 * - concurrent first sign-ins of one account: the losers throw
 *   ConflictError and write nothing, and a retry finds the winner's rows.
 */
export class AccountLinkRepository {
  constructor(
    private readonly db: Db,
    private readonly users: UserRepository,
    private readonly links: FederatedIdentityRepository,
  ) {}

  link(request: AccountLinkRequest): Promise<AccountLink> {
    return this.db.transaction((trx) => this.linkIn(trx, request));
  }

  private async linkIn(trx: Db, r: AccountLinkRequest): Promise<AccountLink> {
    const existing = await this.links.find(r.key, trx);
    if (existing) {
      const user = (await this.users.findById(existing.userId, trx))!; // the foreign key keeps it
      if (user.disabled || existing.username === r.username) return { user, identity: existing, created: false };
      await this.links.updateUsername(r.key, r.username, r.at, trx);
      return { user, identity: { ...existing, username: r.username, updatedAt: r.at }, created: false };
    }
    const identityOf = (user: UserRecord): FederatedIdentityRecord => ({ ...r.key, userId: user.id, username: r.username, createdAt: r.at, updatedAt: r.at });
    const matched = r.trustedEmail === undefined ? undefined : await this.onlyUserWithEmail(trx, r.trustedEmail);
    if (matched?.disabled) return { user: matched, identity: identityOf(matched), created: false };
    let user = matched;
    if (!user) {
      const taken = await this.users.takenNames(r.names, trx);
      user = { ...r.newUser, name: r.names.find((name) => !taken.has(name)) ?? r.fallbackName } as UserRecord;
      await this.users.insert(user, trx);
    }
    const identity = identityOf(user);
    await this.links.insert(identity, trx);
    return { user, identity, created: !matched };
  }

  private async onlyUserWithEmail(trx: Db, email: string): Promise<UserRecord | undefined> {
    const found = await this.users.findByVerifiedEmail(email, trx);
    return found.length === 1 && !found[0]!.isAdmin ? found[0] : undefined;
  }
}
