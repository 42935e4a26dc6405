import { OAuthError } from "./errors.js";

/** The scopes of the spec's table. `openid` is granted when none is asked for. */
export const SUPPORTED_SCOPES = ["openid", "profile", "email", "address", "phone"] as const;
const SUPPORTED = new Set<string>(SUPPORTED_SCOPES);

export const DEFAULT_SCOPE = "openid";

/** Parse a space-separated scope parameter into a de-duplicated list. */
export function parseScope(raw: string | undefined): string[] {
  const scopes = [...new Set((raw ?? "").split(" ").filter((s) => s.length > 0))];
  if (scopes.length === 0) return [DEFAULT_SCOPE];
  const unknown = scopes.find((s) => !SUPPORTED.has(s));
  if (unknown !== undefined) throw new OAuthError("invalid_scope", `unsupported scope: ${unknown.slice(0, 64)}`);
  return scopes;
}

/**
 * The scope of a refresh (RFC 6749 §6): the granted one when none is asked
 * for, else a subset of it. Asking for more is `invalid_scope`.
 */
export function narrowScope(granted: readonly string[], requested: string): string[] {
  if (requested.trim() === "") return [...granted];
  const asked = parseScope(requested);
  const wider = asked.find((s) => !granted.includes(s));
  if (wider !== undefined) {
    throw new OAuthError("invalid_scope", `scope ${wider} was not granted originally; a refresh may only narrow the scope`);
  }
  return asked;
}

/** The user attributes that scopes release. */
export interface ClaimSource {
  name: string;
  displayName: string;
  avatar: string;
  email: string;
  emailVerified: boolean;
  address: string;
  phone: string;
}

/** Every claim any scope can release, for discovery. */
export const SCOPE_CLAIMS = [
  "name", "preferred_username", "picture", "email", "email_verified", "address", "phone_number",
] as const;

/**
 * The one scope-to-claims mapping (the spec's table with OIDC claim names).
 * It feeds the ID token and userinfo alike. Claims without a value are left out.
 */
export function claimsForScopes(user: ClaimSource, scopes: readonly string[]): Record<string, unknown> {
  const claims: Record<string, unknown> = {};
  const put = (claim: string, value: unknown) => {
    if (value !== "" && value !== undefined && value !== null) claims[claim] = value;
  };
  if (scopes.includes("profile")) {
    put("name", user.displayName || user.name);
    put("preferred_username", user.name);
    put("picture", user.avatar);
  }
  if (scopes.includes("email") && user.email) {
    put("email", user.email);
    put("email_verified", user.emailVerified);
  }
  if (scopes.includes("address") && user.address) put("address", { formatted: user.address });
  if (scopes.includes("phone")) put("phone_number", user.phone);
  return claims;
}
