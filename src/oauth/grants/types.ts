import type { AuditTrail, EventCarrier } from "../../shared/audit.js";
import type { Clock } from "../../shared/clock.js";
import type { Store } from "../../store/index.js";
import type { ClientAuthenticator, PresentedClient } from "../clientAuth.js";
import type { TrustedIssuers } from "../trustedIssuers.js";
import type { KeyRing } from "../keys.js";
import type { AuthorizationCodes } from "../codes.js";
import type { DPoPProofs, ProofContext } from "../dpop.js";
import type { Metrics } from "../metrics.js";
import type { ResourceIndicators } from "../resourceIndicators.js";
import type { TokenMinter, TokenSet } from "../tokens.js";
import type { UserAuthenticator } from "../userAuth.js";
import type { ApplicationRecord } from "../../shared/model.js";

/**
 * The token request's parameters (RFC 6749 §4); absent ones are "". The
 * contract's TokenRequest carries each of them: rpc/token.ts fails to compile
 * when one is missing there, so the domain stays free of proto types.
 */
export interface TokenParams {
  grantType: string;
  clientId: string;
  clientSecret: string;
  /** RFC 7523 §2.2 client authentication. */
  clientAssertionType: string;
  clientAssertion: string;
  scope: string;
  username: string;
  password: string;
  code: string;
  redirectUri: string;
  codeVerifier: string;
  refreshToken: string;
  /** RFC 8707: the resource URIs named, each once. */
  resource: string[];
  /** RFC 8628 §3.4. */
  deviceCode: string;
  /** RFC 8693 §2.1. */
  subjectToken: string;
  subjectTokenType: string;
  actorToken: string;
  actorTokenType: string;
  audience: string;
  requestedTokenType: string;
  /** RFC 7523 §2.1. */
  assertion: string;
}

/** Where a token request came from, as the front door saw it. */
export interface RequestOrigin {
  /** The client's IP address (the socket's, or a trusted proxy's X-Forwarded-For). */
  clientAddress?: string;
  /** The request's log line, which carries the token_issued event. */
  logLine?: EventCarrier;
  /** The request's DPoP header and target (RFC 9449 §5), when the door saw one. */
  dpop?: ProofContext;
  /** The thumbprint of the key of the request's checked DPoP proof: set by the token endpoint, for the grants that check a binding. */
  dpopJkt?: string;
}

/** What grants may use; each grant's handler names the part it takes. */
export interface GrantDeps {
  store: Pick<Store, "users" | "refreshTokens" | "userFactors" | "deviceCodes" | "applications" | "clientAssertionJtis" | "accessTokens">;
  /** Domain events for operators (tokens issued, refresh reuse, login failures ...). */
  metrics: Metrics;
  /** Security events (tokens issued, refresh reuse ...): the audit trail. */
  audit: AuditTrail;
  minter: TokenMinter;
  clock: Clock;
  clients: ClientAuthenticator;
  users: UserAuthenticator;
  /** How long a consumed refresh token may be presented again without revoking its family. */
  refreshReuseGraceSeconds: number;
  codes: AuthorizationCodes;
  /** The registered resource servers (RFC 8707). */
  resources: ResourceIndicators;
  /** Our issuer and keys, to check our own ID tokens (token exchange). */
  issuer: string;
  keys: KeyRing;
  /** Platforms whose tokens workloads present (the JWT bearer grant). */
  trustedIssuers: TrustedIssuers;
  /** DPoP proofs (RFC 9449): checked by the token endpoint before any grant runs. */
  dpop: DPoPProofs;
}

/** The parameters the token endpoint reads itself: which grant, and the client's credentials. */
type EndpointParam = "grantType" | "clientId" | "clientSecret" | "clientAssertionType" | "clientAssertion";

/** A parameter a grant may read. */
export type GrantParam = Exclude<keyof TokenParams, EndpointParam>;

/** What a grant's module declares about it: every list of grant types is derived from these (grants/index.ts). */
export interface GrantFacts {
  /** Its `grant_type` value, as applications list it. */
  readonly grantType: string;
  /** A shorter name an application may list it by too (for a URN grant type). */
  readonly shortName?: string;
  /** On for every application whatever its grantTypes list (true), or only where listed (false). */
  readonly alwaysEnabled: boolean;
  /** Whether it always takes the client's secret, so that a public client can never use it. */
  readonly needsSecret: boolean;
}

/** One grant type of the token endpoint, in its own module. */
export interface GrantHandler<P extends GrantParam = GrantParam> extends GrantFacts {
  /** The parameters it reads: the token endpoint hands it these and no others. */
  readonly parameters: readonly P[];
  /**
   * Whether this request may come without a client secret from `app` (a
   * PKCE code exchange, or a public client's refresh). When false or
   * absent, the client secret is required.
   */
  allowsPublicClient?(params: Pick<TokenParams, P>, app: ApplicationRecord): boolean;
  /**
   * Names the application from what the request itself proves, instead of
   * client authentication (RFC 7523 §2.1: a workload's assertion).
   */
  identify?(client: PresentedClient, params: Pick<TokenParams, P>, deps: GrantDeps): Promise<ApplicationRecord>;
  /** Runs after the client is authenticated and the grant found enabled. */
  handle(app: ApplicationRecord, params: Pick<TokenParams, P>, deps: GrantDeps, origin: RequestOrigin): Promise<TokenSet>;
}

/** A grant's declaration, with its parameters' names inferred from the list it gives. */
export const defineGrant = <P extends GrantParam>(grant: GrantHandler<P>): GrantHandler<P> => grant;
