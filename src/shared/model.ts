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
 * Whether an application asks for a second factor (issue #46): `optional`
 * asks users who enrolled one; `required` makes a user without one enrol
 * during sign-in, before the application gets a code.
 */
export const MFA_POLICIES = ["optional", "required"] as const;
export type MfaPolicy = (typeof MFA_POLICIES)[number];

/**
 * The security profile an application is held to: "" (none, the default) or
 * `fapi2`, the FAPI 2.0 Security Profile (oauth/fapi2.ts).
 */
export const APPLICATION_PROFILES = ["", "fapi2"] as const;
export type ApplicationProfile = (typeof APPLICATION_PROFILES)[number];

/** A user's second factor: a one-time code secret (RFC 6238) or a passkey (WebAuthn). */
export interface UserFactorRecord {
  id: string;
  userId: string;
  type: "totp" | "passkey";
  /** The user's name for it. */
  name: string;
  /** TOTP: the base32 secret, sealed with --secret-key when set. */
  secret: string | null;
  /** Passkey: the credential id and COSE public key, base64url. */
  credentialId: string | null;
  publicKey: string | null;
  /** Passkey: the last signature counter seen. */
  counter: number;
  transports: string[];
  /** False while a one-time code enrolment waits for its first valid code. */
  confirmed: boolean;
  createdAt: number;
  lastUsedAt: number | null;
}

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
  /** The second-factor policy; absent is `optional`. */
  mfa?: MfaPolicy;
  /** Whether its login page offers "Create account" (accounts/signUp.ts). Absent is false. */
  signup?: boolean;
  /** Whether a user must consent before it gets a code or token (always for a registered client). */
  consentRequired: boolean;
  /** Present for a client that registered itself (RFC 7591): what it registered. */
  registration?: ClientRegistration;
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
  /** RFC 9126 §5: its authorize requests come through PAR only. Absent is false. */
  requirePushedAuthorizationRequests?: boolean;
  /** RFC 9449: every token request must carry a DPoP proof, so every access token is bound to a key. Absent is false. */
  dpopBoundAccessTokens?: boolean;
  /** OIDC Back-Channel Logout 1.0 §2.2: where it is told that a session it has tokens from ended; "" for never. */
  backchannelLogoutUri: string;
  /** §2.2 backchannel_logout_session_required: its logout tokens must carry `sid` (ours always do). */
  backchannelLogoutSessionRequired: boolean;
  /** Whether backchannelLogoutUri may target a private or link-local address (loopback needs no leave). */
  allowPrivateBackchannelLogoutUri: boolean;
  /** `fapi2`: held to the FAPI 2.0 Security Profile (oauth/fapi2.ts). Absent is "", no profile. */
  profile?: ApplicationProfile;
  createdAt: number;
  updatedAt: number;
}

/** A registered client's registration (RFC 7591, RFC 7592). */
/** What every application the service makes itself must say; applicationRecord() defaults the rest. */
export type ApplicationEssentials = Pick<
  ApplicationRecord,
  "id" | "name" | "clientId" | "clientSecretHash" | "redirectUris" | "grantTypes" | "expireInHours" | "refreshExpireInHours" | "publicClient" | "tokenEndpointAuthMethod" | "createdAt" | "updatedAt"
>;

/**
 * An application the service makes itself (a registered client, a metadata
 * document's, the account page's): `fields` over the defaults of an
 * application without providers, origins, keys, token exchange, consent or
 * back-channel logout.
 */
export function applicationRecord(fields: ApplicationEssentials & Partial<ApplicationRecord>): ApplicationRecord {
  return {
    providers: [],
    allowedOrigins: [],
    tokenFormat: DEFAULT_TOKEN_FORMAT,
    signingAlg: DEFAULT_SIGNING_ALG,
    accessTokenStrategy: DEFAULT_ACCESS_TOKEN_STRATEGY,
    consentRequired: false,
    jwks: "",
    jwksUri: "",
    clientSecretSealed: "",
    exchangeAudiences: [],
    allowImpersonation: false,
    backchannelLogoutUri: "",
    backchannelLogoutSessionRequired: false,
    allowPrivateBackchannelLogoutUri: false,
    ...fields,
  };
}

export interface ClientRegistration {
  /** Its client metadata (RFC 7591 §2) as accepted, by the RFC's names. */
  metadata: Record<string, unknown>;
  /** SHA-256 of its registration access token (RFC 7592 §1), which alone reads, changes or deletes it; "" for a metadata document's client. */
  accessTokenHash: string;
  /** Read from its client ID metadata document, whose URL is its client_id (accounts/clientMetadataDocuments.ts); no RFC 7592 access. */
  metadataDocument?: true;
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
  /** Made by sign-up with mail configured: no sign-in until the email is verified (accounts/signUp.ts). Absent is false. */
  mustVerifyEmail?: boolean;
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

/** A scope a resource server understands, with the one line the consent page shows for it. */
export interface ResourceScope {
  name: string;
  description: string;
}

/** A resource server (RFC 8707): tokens meant for it carry its URI as `aud`. */
export interface ResourceRecord {
  /** An absolute https URI without a fragment (http only on a loopback host). */
  uri: string;
  name: string;
  scopes: ResourceScope[];
  createdAt: number;
  updatedAt: number;
}
