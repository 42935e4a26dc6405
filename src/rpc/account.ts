import type { FederatedIdentityRecord, UserRecord } from "../shared/model.js";

/** A linked external account as the contract shows it: never any upstream token. */
export function linkedIdentityOf(link: FederatedIdentityRecord) {
  return { provider: link.provider, externalId: link.externalId, username: link.username };
}

/** The get-account user object. Only what is listed here leaves the service. */
export function accountOf(user: UserRecord, links: readonly FederatedIdentityRecord[]) {
  return {
    id: user.id,
    name: user.name,
    displayName: user.displayName,
    email: user.email,
    emailVerified: user.emailVerified,
    avatar: user.avatar,
    phone: user.phone,
    address: user.address ? [user.address] : [],
    createdTime: new Date(user.createdAt).toISOString(),
    updatedTime: new Date(user.updatedAt).toISOString(),
    isAdmin: user.isAdmin,
    linkedIdentities: links.map(linkedIdentityOf),
    properties: user.properties,
  };
}
