import { ALL_ACCOUNT_FIELDS, type AccountField } from "../oauth/scopes.js";
import type { FederatedIdentityRecord, UserRecord } from "../shared/model.js";

/** A linked external account as the contract shows it: never any upstream token. */
export function linkedIdentityOf(link: FederatedIdentityRecord) {
  return { provider: link.provider, externalId: link.externalId, username: link.username };
}

/**
 * The get-account user object. Only what is listed here leaves the service,
 * and of it only `id` and the `fields` given (what the caller's scopes
 * release, scopes.ts); every other field is sent empty, so the object keeps
 * Casdoor's shape.
 */
export function accountOf(user: UserRecord, links: readonly FederatedIdentityRecord[], fields: ReadonlySet<AccountField> = ALL_ACCOUNT_FIELDS) {
  const shown = (field: AccountField) => fields.has(field);
  return {
    id: user.id,
    name: shown("name") ? user.name : "",
    displayName: shown("displayName") ? user.displayName : "",
    email: shown("email") ? user.email : "",
    emailVerified: shown("emailVerified") ? user.emailVerified : false,
    avatar: shown("avatar") ? user.avatar : "",
    phone: shown("phone") ? user.phone : "",
    address: shown("address") && user.address ? [user.address] : [],
    createdTime: shown("createdTime") ? new Date(user.createdAt).toISOString() : "",
    updatedTime: shown("updatedTime") ? new Date(user.updatedAt).toISOString() : "",
    isAdmin: shown("isAdmin") ? user.isAdmin : false,
    linkedIdentities: shown("linkedIdentities") ? links.map(linkedIdentityOf) : [],
    properties: shown("properties") ? user.properties : {},
  };
}
