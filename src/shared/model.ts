/**
 * The entities every layer talks about, as plain data. The store maps its
 * rows to these; the domain and the front doors use them and never see a row.
 */

export interface ApplicationRecord {
  id: string;
  name: string;
  clientId: string;
  clientSecretHash: string;
  redirectUris: string[];
  grantTypes: string[];
  expireInHours: number;
  refreshExpireInHours: number;
  providers: string[];
  createdAt: number;
  updatedAt: number;
}

export interface UserRecord {
  id: string;
  name: string;
  passwordHash: string | null;
  displayName: string;
  email: string;
  emailVerified: boolean;
  avatar: string;
  phone: string;
  address: string;
  isAdmin: boolean;
  disabled: boolean;
  properties: Record<string, string>;
  createdAt: number;
  updatedAt: number;
}

export interface SigningKeyRecord {
  kid: string;
  alg: string;
  privateJwk: string;
  publicJwk: string;
  createdAt: number;
  activeFrom: number;
  retiredAt: number | null;
}

/** A Custom OAuth login provider. The client secret is stored as given by the domain (sealed or not). */
export interface ProviderRecord {
  name: string;
  type: string;
  displayName: string;
  clientId: string;
  clientSecret: string;
  authUrl: string;
  scope: string;
  tokenUrl: string;
  userInfoUrl: string;
  favicon: string;
  trustEmail: boolean;
  createdAt: number;
  updatedAt: number;
}

/** What identifies an external account at its provider. */
export type ExternalIdType = "sub" | "preferred_username";

/** A link from an account at an external provider to a local user. */
export interface FederatedIdentityRecord {
  provider: string;
  externalIdType: ExternalIdType;
  externalId: string;
  userId: string;
  /** The account's preferred_username at the provider, as last seen. */
  username: string;
  createdAt: number;
  updatedAt: number;
}
