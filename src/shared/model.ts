/**
 * The entities every layer talks about, as plain data. The store maps its
 * rows to these; the domain and the front doors use them and never see a row.
 */

/**
 * What an application's tokens say, with Casdoor's names: `JWT-Standard`,
 * OIDC's standard claims; `JWT`, Casdoor's user-object claims (owner, name,
 * displayName, email, avatar, id, type) in the access token and the ID token.
 */
export const TOKEN_FORMATS = ["JWT-Standard", "JWT"] as const;
export type TokenFormat = (typeof TOKEN_FORMATS)[number];
export const DEFAULT_TOKEN_FORMAT: TokenFormat = "JWT-Standard";

/** How an application's ID tokens and JWT access tokens are signed (JWA names; EdDSA is Ed25519). */
export const SIGNING_ALGS = ["RS256", "PS256", "ES256", "EdDSA"] as const;
export type SigningAlg = (typeof SIGNING_ALGS)[number];
export const DEFAULT_SIGNING_ALG: SigningAlg = "RS256";

/** What an application's access tokens are (Hydra's name): a signed JWT, or a random string only this service can read. */
export const ACCESS_TOKEN_STRATEGIES = ["jwt", "opaque"] as const;
export type AccessTokenStrategy = (typeof ACCESS_TOKEN_STRATEGIES)[number];
export const DEFAULT_ACCESS_TOKEN_STRATEGY: AccessTokenStrategy = "jwt";

/**
 * How an application authenticates at the token, introspection and
 * revocation endpoints (OIDC Core §9, RFC 7591 §2). `client_secret_basic`
 * (the default) and `client_secret_post` both take the secret either way;
 * the JWT methods take only a signed assertion (RFC 7523 §2.2); `none` is a
 * public client.
 */
export const TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic", "client_secret_post", "client_secret_jwt", "private_key_jwt", "none"] as const;
export type TokenEndpointAuthMethod = (typeof TOKEN_ENDPOINT_AUTH_METHODS)[number];

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
  /** Browser origins (scheme://host[:port]) allowed to call the API across origins (CORS). */
  allowedOrigins: string[];
  tokenFormat: TokenFormat;
  signingAlg: SigningAlg;
  accessTokenStrategy: AccessTokenStrategy;
  /** A public client (RFC 6749 §2.1): no secret anybody knows; code + PKCE, refresh and revocation by client_id alone (oauth/publicClients.ts). */
  publicClient: boolean;
  /** How it authenticates (OIDC Core §9); `none` exactly when publicClient. */
  tokenEndpointAuthMethod: TokenEndpointAuthMethod;
  /** private_key_jwt: its public keys, a JWK Set as JSON text; "" when jwksUri holds them. */
  jwks: string;
  /** private_key_jwt: where its JWK Set is published (https); "" when jwks holds it. */
  jwksUri: string;
  /** client_secret_jwt: the secret itself, sealed (federation/secretBox.ts), as HS256 needs it; "" otherwise. */
  clientSecretSealed: string;
  /** Token exchange (RFC 8693): the audiences (client ids, resources) it may exchange tokens for. */
  exchangeAudiences: string[];
  /** Token exchange without an actor token: a token for the subject alone. */
  allowImpersonation: boolean;
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
  /** JSON paths into the UserInfo answer, by Casdoor's keys; an absent key keeps the type's default. */
  userMapping: UserMapping;
  /** How the client authenticates at the Token URL. */
  tokenAuthMethod: ProviderTokenAuthMethod;
  /** Whether the round trip sends PKCE (S256). */
  pkce: boolean;
  /** Whether plain http URLs are allowed for hosts other than loopback. */
  allowInsecureUrls: boolean;
  /** GitHub: where the account's emails are read when the profile has no public one; empty for the type's default. */
  emailsUrl: string;
  /** OIDC: the issuer whose discovery document configures the round trip; empty for other types. */
  issuer: string;
  /**
   * Whether the provider returns to the shared `<issuer>/callback` instead of
   * `<issuer>/callback/<name>`: open to mix-up (RFC 9700 §4.4) when an
   * application offers another provider.
   */
  sharedCallback: boolean;
  createdAt: number;
  updatedAt: number;
}

/** The keys of a provider's user mapping (Casdoor's, plus phone). */
export const USER_MAPPING_KEYS = ["id", "username", "displayName", "email", "avatarUrl", "phone"] as const;
export type UserMappingKey = (typeof USER_MAPPING_KEYS)[number];
export type UserMapping = Partial<Record<UserMappingKey, string>>;

export const PROVIDER_TOKEN_AUTH_METHODS = ["client_secret_basic", "client_secret_post"] as const;
export type ProviderTokenAuthMethod = (typeof PROVIDER_TOKEN_AUTH_METHODS)[number];

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
