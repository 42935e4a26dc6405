import { OAuthError } from "./errors.js";
import { constantTimeEqual, sha256 } from "./secrets.js";

/** The one PKCE method we accept (RFC 9700 §2.1.1: `plain` is not allowed). */
export const PKCE_METHOD = "S256";

// RFC 7636 §4.1: 43-128 unreserved characters.
const VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;
// An S256 challenge is the base64url SHA-256 of the verifier: always 43 characters.
const S256_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

/**
 * Check the PKCE parameters of an authorize request. Returns the challenge,
 * or undefined when PKCE is not used.
 */
export function parseChallenge(challenge: string | undefined, method: string | undefined): string | undefined {
  if (!challenge && !method) return undefined;
  if (!challenge) throw new OAuthError("invalid_request", "code_challenge_method was sent without code_challenge");
  if (!method) throw new OAuthError("invalid_request", "code_challenge requires code_challenge_method=S256");
  if (method !== PKCE_METHOD) throw new OAuthError("invalid_request", "code_challenge_method must be S256");
  if (!S256_CHALLENGE.test(challenge)) throw new OAuthError("invalid_request", "code_challenge is not an S256 challenge");
  return challenge;
}

/**
 * Check a token request's code_verifier against the code's challenge
 * (RFC 7636 §4.6). A verifier for a code issued without a challenge is a
 * downgrade attempt and is refused too (RFC 9700 §2.1.1).
 */
export function verifyPkce(challenge: string | null, verifier: string): void {
  if (challenge === null) {
    if (verifier) throw new OAuthError("invalid_grant", "code_verifier sent for a code issued without code_challenge");
    return;
  }
  if (!verifier) throw new OAuthError("invalid_grant", "code_verifier is required: the code was issued with PKCE");
  if (!VERIFIER.test(verifier) || !constantTimeEqual(sha256(verifier), challenge)) {
    throw new OAuthError("invalid_grant", "code_verifier does not match the code_challenge");
  }
}
