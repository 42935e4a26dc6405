import { randomBytes, randomUUID } from "node:crypto";
import { absoluteHttpUrlProblem } from "../accounts/validation.js";
import type { Clock } from "../shared/clock.js";
import { OAuthError } from "../oauth/errors.js";
import type { Db } from "../store/db.js";
import { ConflictError } from "../store/errors.js";
import type { ExternalKey } from "../store/federatedIdentities.js";
import type { Store } from "../store/index.js";
import type { UpstreamProfile } from "./upstream.js";
import type { FederatedIdentityRecord, ProviderRecord, UserRecord } from "../shared/model.js";

export interface LinkResult {
  user: UserRecord;
  identity: FederatedIdentityRecord;
  /** Whether this sign-in created the local user. */
  created: boolean;
}

// Concurrent first sign-ins can collide on the link or on a new user's name;
// the loser looks again and finds the winner's rows.
const ATTEMPTS = 3;

/** The external account's key: provider plus the id read through its mapping (`sub`, or preferred_username by default). */
export function externalKey(provider: string, profile: UpstreamProfile): ExternalKey {
  return { provider, externalIdType: profile.idType, externalId: profile.id };
}

/**
 * Maps an external account to a local user. A known account gets its linked
 * user. An unknown one gets a new user, unless the provider is trusted with
 * emails and exactly one local non-admin user has that email, verified.
 * Never by name, and never by email otherwise: whoever controls an account
 * at the provider would take over the local user with the same name or
 * address. The user and the link are written in one transaction.
 */
export class AccountLinker {
  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
  ) {}

  async link(provider: ProviderRecord, profile: UpstreamProfile): Promise<LinkResult> {
    const key = externalKey(provider.name, profile);
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.store.db.transaction((trx) => this.linkIn(trx, key, provider, profile));
      } catch (err) {
        if (!(err instanceof ConflictError) || attempt === ATTEMPTS) throw err;
      }
    }
  }

  private async linkIn(trx: Db, key: ExternalKey, provider: ProviderRecord, profile: UpstreamProfile): Promise<LinkResult> {
    const { users, federatedIdentities: links } = this.store;
    const now = this.clock.now();
    const existing = await links.find(key, trx);
    if (existing) {
      const user = (await users.findById(existing.userId, trx))!; // the foreign key keeps it
      refuseDisabled(user);
      const username = linkUsername(profile);
      if (existing.username === username) return { user, identity: existing, created: false };
      await links.updateUsername(key, username, now, trx);
      return { user, identity: { ...existing, username, updatedAt: now }, created: false };
    }
    const emailTrusted = provider.trustEmail && profile.emailVerified !== false && isEmail(profile.email);
    let user = emailTrusted ? await this.userWithVerifiedEmail(trx, profile.email) : undefined;
    const created = !user;
    if (user) {
      refuseDisabled(user);
    } else {
      user = await this.newUser(trx, provider.name, profile, emailTrusted);
      await users.insert(user, trx);
    }
    const identity: FederatedIdentityRecord = { ...key, userId: user.id, username: linkUsername(profile), createdAt: now, updatedAt: now };
    await links.insert(identity, trx);
    return { user, identity, created };
  }

  private async userWithVerifiedEmail(trx: Db, email: string): Promise<UserRecord | undefined> {
    const found = await this.store.users.findByVerifiedEmail(email, trx);
    // Ambiguity, or an administrator, is never resolved by an email match.
    return found.length === 1 && !found[0]!.isAdmin ? found[0] : undefined;
  }

  private async newUser(trx: Db, provider: string, profile: UpstreamProfile, emailTrusted: boolean): Promise<UserRecord> {
    const now = this.clock.now();
    const email = isEmail(profile.email) ? profile.email : "";
    return {
      id: randomUUID(),
      // Without a user name from the provider: one derived from the provider and the id, made unique like any other.
      name: await this.freeName(trx, profile.username ?? `${provider}-${profile.id}`),
      // No password: this user signs in through the provider only.
      passwordHash: null,
      displayName: profile.displayName.slice(0, 200),
      email,
      emailVerified: emailTrusted && email !== "",
      avatar: profile.avatarUrl.length <= 2000 && !absoluteHttpUrlProblem(profile.avatarUrl) ? profile.avatarUrl : "",
      phone: profile.phone.slice(0, 100),
      address: "",
      isAdmin: false,
      disabled: false,
      properties: {},
      createdAt: now,
      updatedAt: now,
    };
  }

  /** preferred_username made into a valid local name, with -2, -3, ... (then random) when taken. */
  private async freeName(trx: Db, preferred: string): Promise<string> {
    const base = preferred.normalize("NFKC").replace(/[^A-Za-z0-9_.@-]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 80) || "user";
    const candidates = [base, ...Array.from({ length: 8 }, (_, i) => `${base}-${i + 2}`)];
    const taken = await this.store.users.takenNames(candidates, trx);
    return candidates.find((name) => !taken.has(name)) ?? `${base}-${randomBytes(4).toString("hex")}`;
  }
}

function refuseDisabled(user: UserRecord): void {
  if (user.disabled) throw new OAuthError("access_denied", "this account is disabled");
}

/** The user name at the provider that the link notes (the column holds at most 200 characters). */
const linkUsername = (profile: UpstreamProfile) => (profile.username ?? "").slice(0, 200);

const isEmail = (value: string) => value.length <= 320 && /^[^\s@]+@[^\s@]+$/.test(value);
