import { randomBytes, randomUUID } from "node:crypto";
import { absoluteHttpUrlProblem } from "../accounts/validation.js";
import type { Clock } from "../shared/clock.js";
import { OAuthError } from "../oauth/errors.js";
import { ConflictError } from "../store/errors.js";
import type { ExternalKey } from "../store/federatedIdentities.js";
import type { AccountLinkRequest } from "../store/accountLinks.js";
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
    private readonly links: Pick<Store["accountLinks"], "link">,
    private readonly clock: Clock,
  ) {}

  async link(provider: ProviderRecord, profile: UpstreamProfile): Promise<LinkResult> {
    const request = this.request(provider, profile);
    for (let attempt = 1; ; attempt++) {
      try {
        const linked = await this.links.link(request);
        refuseDisabled(linked.user);
        return linked;
      } catch (err) {
        if (!(err instanceof ConflictError) || attempt === ATTEMPTS) throw err;
      }
    }
  }

  private request(provider: ProviderRecord, profile: UpstreamProfile): AccountLinkRequest {
    const now = this.clock.now();
    const emailTrusted = provider.trustEmail && profile.emailVerified !== false && isEmail(profile.email);
    const email = isEmail(profile.email) ? profile.email : "";
    // Without a user name from the provider: one derived from the provider and the id, made unique like any other.
    const base = nameBase(profile.username ?? `${provider.name}-${profile.id}`);
    return {
      key: externalKey(provider.name, profile),
      username: linkUsername(profile),
      at: now,
      trustedEmail: emailTrusted ? profile.email : undefined,
      names: [base, ...Array.from({ length: 8 }, (_, i) => `${base}-${i + 2}`)],
      fallbackName: `${base}-${randomBytes(4).toString("hex")}`,
      newUser: {
        id: randomUUID(),
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
      },
    };
  }
}

/** preferred_username made into a valid local name (the store adds -2, -3, ... when taken). */
const nameBase = (preferred: string) => preferred.normalize("NFKC").replace(/[^A-Za-z0-9_.@-]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 80) || "user";

function refuseDisabled(user: UserRecord): void {
  if (user.disabled) throw new OAuthError("access_denied", "this account is disabled");
}

/** The user name at the provider that the link notes (the column holds at most 200 characters). */
const linkUsername = (profile: UpstreamProfile) => (profile.username ?? "").slice(0, 200);

const isEmail = (value: string) => value.length <= 320 && /^[^\s@]+@[^\s@]+$/.test(value);
