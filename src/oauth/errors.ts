import { isStoreUnavailable, isUnstorableText } from "../store/errors.js";

/**
 * The one error type of the domain. It carries an OAuth error code
 * (RFC 6749 §5.2, RFC 6750 §3.1, RFC 7009) and a description that is safe to
 * show to the caller. Each front door maps it once: Connect codes for RPC
 * callers, RFC 6749 JSON for REST.
 */
export type OAuthErrorCode =
  | "invalid_request"
  | "invalid_client"
  | "invalid_grant"
  | "unauthorized_client"
  | "unsupported_grant_type"
  | "invalid_scope"
  // RFC 8707 §2, RFC 8693 §2.2.2: an audience or resource the client may not reach.
  | "invalid_target"
  | "invalid_token"
  | "insufficient_scope"
  | "unsupported_token_type"
  | "access_denied"
  | "unsupported_response_type"
  | "login_required"
  | "interaction_required"
  | "request_not_supported"
  | "request_uri_not_supported"
  // RFC 9101 §6.2, OIDC Core §3.1.2.6: a request object or request_uri that cannot be used.
  | "invalid_request_object"
  | "invalid_request_uri"
  // RFC 8707 §2: a resource that is unknown, malformed or wider than granted.
  | "invalid_target"
  // OIDC Core §3.1.2.6: prompt=none, and the user has not consented.
  | "consent_required"
  // RFC 7591 §3.2.2: refused client metadata.
  | "invalid_redirect_uri"
  | "invalid_client_metadata"
  | "not_found"
  | "already_exists"
  // A change the account's state forbids until the caller does something first (gRPC FAILED_PRECONDITION).
  | "failed_precondition"
  | "server_error"
  | "temporarily_unavailable"
  // RFC 8628 §3.5: a device's poll before the user decided, or too soon, or too late.
  | "authorization_pending"
  | "slow_down"
  | "expired_token"
  // RFC 9449 §5, §7.1: a DPoP proof that is missing, malformed or replayed; a proof without the server's fresh nonce (§8).
  | "invalid_dpop_proof"
  | "use_dpop_nonce"
  // RFC 9470 §3: the token's authentication is too old (or too weak) for this call: sign in again.
  | "insufficient_user_authentication";

/**
 * What an error's answer carries besides its code (RFC 9449): the scheme of
 * its WWW-Authenticate challenge at a protected resource, and a fresh
 * DPoP-Nonce for the client to retry with.
 */
export interface ErrorAnswer {
  /** `DPoP`: the resource challenges with DPoP (§7.1) instead of Bearer, naming the proof algorithms it takes. */
  challenge?: "DPoP";
  algs?: readonly string[];
  /** The server nonce the next proof must carry (§8). */
  dpopNonce?: string;
  /** RFC 9470 §3: the most seconds since the user's sign-in the resource takes, a `max_age` challenge parameter. */
  maxAge?: number;
}

export class OAuthError extends Error {
  constructor(
    readonly code: OAuthErrorCode,
    readonly description: string,
    /** Overrides the code's usual HTTP status (for example 413 for a body too large). */
    readonly status?: number,
    /** A DPoP challenge or nonce the answer carries. */
    readonly answer?: ErrorAnswer,
  ) {
    super(`${code}: ${description}`);
    this.name = "OAuthError";
  }
}

/**
 * A caller's value quoted in an error description, cut short: a description
 * travels back in a gRPC trailer or a page, and must not grow with the input.
 */
export function echo(value: string): string {
  return value.length > 64 ? `${wellFormed(value.slice(0, 64))}…` : value;
}

/**
 * The text with each half of a surrogate pair that lacks its other half
 * replaced by U+FFFD. A cut (or a caller) can leave one, and a gRPC trailer
 * cannot carry it (encodeURIComponent throws).
 */
export function wellFormed(text: string): string {
  return text.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, "\uFFFD");
}

/** HTTP status for each code, as RFC 6749 §5.2 and RFC 6750 §3.1 ask. */
export function httpStatusOf(code: OAuthErrorCode): number {
  switch (code) {
    case "invalid_client":
    case "invalid_token":
    case "login_required":
    case "insufficient_user_authentication":
      return 401;
    case "insufficient_scope":
    case "access_denied":
      return 403;
    case "not_found":
      return 404;
    case "already_exists":
    case "failed_precondition":
      return 409;
    case "server_error":
      return 500;
    case "temporarily_unavailable":
      return 503;
    default:
      return 400;
  }
}

/**
 * The OAuth error a failure stands for, for the front doors: an OAuthError
 * as it is, an unreachable or overloaded database as temporarily_unavailable
 * (503, worth a retry), text the database cannot hold as invalid_request,
 * anything else undefined (a bug: 500).
 */
export function asOAuthError(err: unknown): OAuthError | undefined {
  if (err instanceof OAuthError) return err;
  if (isStoreUnavailable(err)) return new OAuthError("temporarily_unavailable", "the database is unavailable; try again shortly");
  if (isUnstorableText(err)) return new OAuthError("invalid_request", "a parameter contains a character that is not allowed (NUL)");
  return undefined;
}

/**
 * Whether the front doors should log a failure: anything but an OAuthError
 * or the caller's unstorable text. An unreachable database is logged, for
 * the operator, although the caller gets a clean 503.
 */
export function worthLogging(failure: unknown): boolean {
  return !(failure instanceof OAuthError) && !isUnstorableText(failure);
}

/** Seconds a client should wait before retrying a temporarily_unavailable answer. */
export const RETRY_AFTER_SECONDS = 5;
