import { OAuthError } from "./errors.js";

/** The scopes of the spec's table. `openid` is granted when none is asked for. */
export const SUPPORTED_SCOPES = ["openid", "profile", "email", "address", "phone"] as const;
/**
 * Ours, beside the spec's: the whole account. get-account answers a token
 * every field only with it (the browser session always sees them all), and
 * userinfo releases every claim.
 */
export const ACCOUNT_SCOPE = "account";
/**
 * OIDC Core §11: asks for a refresh token. Every user grant issues one anyway
 * (as Casdoor does, when the application's refreshExpireInHours allows its
 * use), so granting it changes nothing but the `scope` the client reads.
 */
export const OFFLINE_ACCESS_SCOPE = "offline_access";
/** Every scope a token may carry, as discovery lists them. */
export const GRANTABLE_SCOPES = [...SUPPORTED_SCOPES, ACCOUNT_SCOPE, OFFLINE_ACCESS_SCOPE] as const;
/**
 * Ours: the admin RPCs accept an access token carrying it (rpc/adminAuth.ts).
 * Granted only to an admin user signing in to the console's own application
 * (`adminScopeGrantable`, checked by the minter for every grant); no other
 * client can be granted it, so discovery does not list it.
 */
export const ADMIN_SCOPE = "identity:admin";
/** The client id of the application the service creates for its admin console (accounts/consoleClient.ts). */
export const CONSOLE_CLIENT_ID = "identity-console";
const SUPPORTED = new Set<string>([...GRANTABLE_SCOPES, ADMIN_SCOPE]);

export const DEFAULT_SCOPE = "openid";

/**
 * Parse a space-separated scope parameter into the de-duplicated list of
 * scopes granted. A scope this service does not know is ignored, not refused
 * (OIDC Core §3.1.2.1; RFC 6749 §3.3 lets the server grant less than asked,
 * and the response's `scope` says what was granted): Casdoor's SDKs send
 * `scope=read`. When nothing known is left, `openid` is granted, as when no
 * scope is asked for.
 */
export function parseScope(raw: string | undefined, resourceScopes: readonly string[] = []): string[] {
  const scopes = knownScopes(raw, resourceScopes);
  return scopes.length === 0 ? [DEFAULT_SCOPE] : scopes;
}

/** `also`: scopes known besides the service's own, those of the resources a request names (RFC 8707). */
function knownScopes(raw: string | undefined, also: readonly string[] = []): string[] {
  return [...new Set((raw ?? "").split(" ").filter((s) => SUPPORTED.has(s) || (s !== ADMIN_SCOPE && also.includes(s))))];
}

/**
 * The scopes a grant may have: the admin scope is left out unless an admin
 * user signs in to the console's application (a scope the server does not
 * grant is dropped, RFC 6749 §3.3). Nothing left is `openid`, as in parseScope.
 * A user demoted since keeps none on refresh; the admin RPCs also check the
 * user at each call.
 */
export function grantableScopes(scopes: readonly string[], clientId: string, user: { isAdmin: boolean } | undefined): string[] {
  if (!scopes.includes(ADMIN_SCOPE) || adminScopeGrantable(clientId, user)) return [...scopes];
  const kept = scopes.filter((s) => s !== ADMIN_SCOPE);
  return kept.length === 0 ? [DEFAULT_SCOPE] : kept;
}

export function adminScopeGrantable(clientId: string, user: { isAdmin: boolean } | undefined): boolean {
  return clientId === CONSOLE_CLIENT_ID && user?.isAdmin === true;
}

/**
 * The scope of a refresh (RFC 6749 §6): the granted one when none is asked
 * for, else a subset of it. Asking for more is `invalid_scope`.
 */
export function narrowScope(granted: readonly string[], requested: string): string[] {
  // Unknown scopes are ignored here too; nothing known left is the granted scope.
  const asked = knownScopes(requested, granted);
  if (asked.length === 0) return [...granted];
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

/** Every claim any scope can release (OIDC names: userinfo and the ID token), for discovery. */
export const SCOPE_CLAIMS = [
  "name", "preferred_username", "picture", "email", "email_verified", "address", "phone_number",
] as const;
export type ScopeClaim = (typeof SCOPE_CLAIMS)[number];

/** Every field of get-account's user object but `id`, which every caller sees (as userinfo's `sub`). */
export const ACCOUNT_FIELDS = [
  "name", "displayName", "email", "emailVerified", "avatar", "phone", "address",
  "createdTime", "updatedTime", "isAdmin", "linkedIdentities", "properties",
] as const;
export type AccountField = (typeof ACCOUNT_FIELDS)[number];

/**
 * The one table of what each scope releases: OIDC claims at userinfo (and
 * in the ID token), user fields at get-account. docs/tokens.md shows it.
 * sub, iss and aud at userinfo, and id at get-account, come with any token.
 */
export const SCOPE_RELEASES: Readonly<Record<(typeof GRANTABLE_SCOPES)[number], { claims: readonly ScopeClaim[]; account: readonly AccountField[] }>> = {
  openid: { claims: [], account: [] },
  profile: { claims: ["name", "preferred_username", "picture"], account: ["name", "displayName", "avatar"] },
  email: { claims: ["email", "email_verified"], account: ["email", "emailVerified"] },
  address: { claims: ["address"], account: ["address"] },
  phone: { claims: ["phone_number"], account: ["phone"] },
  account: { claims: SCOPE_CLAIMS, account: ACCOUNT_FIELDS },
  offline_access: { claims: [], account: [] },
};

/** Each claim's value; undefined or "" leaves it out. */
const CLAIM_VALUES: Readonly<Record<ScopeClaim, (user: ClaimSource) => unknown>> = {
  name: (user) => user.displayName || user.name,
  preferred_username: (user) => user.name,
  picture: (user) => user.avatar,
  email: (user) => user.email,
  // Said only of an address the user has.
  email_verified: (user) => (user.email ? user.emailVerified : undefined),
  address: (user) => (user.address ? { formatted: user.address } : undefined),
  phone_number: (user) => user.phone,
};

// Tokens carry few distinct scope strings: each kind's set is built once per string and shared (never mutated).
const releasedMemo = { claims: new Map<string, Set<string>>(), account: new Map<string, Set<string>>() };
const RELEASED_MEMO_LIMIT = 256;

function releasedBy(scopes: readonly string[], kind: "claims" | "account"): ReadonlySet<string> {
  const key = scopes.join(" ");
  const memo = releasedMemo[kind];
  let released = memo.get(key);
  if (!released) {
    released = releasedByScopes(scopes, kind);
    if (memo.size >= RELEASED_MEMO_LIMIT) memo.clear();
    memo.set(key, released);
  }
  return released;
}

function releasedByScopes(scopes: readonly string[], kind: "claims" | "account"): Set<string> {
  const released = new Set<string>();
  for (const scope of scopes) {
    if (!Object.hasOwn(SCOPE_RELEASES, scope)) continue;
    for (const item of SCOPE_RELEASES[scope as keyof typeof SCOPE_RELEASES][kind]) released.add(item);
  }
  return released;
}

/**
 * The claims the scopes release about the user, through the one table. It
 * feeds the ID token and userinfo alike. Claims without a value are left out.
 */
export function claimsForScopes(user: ClaimSource, scopes: readonly string[]): Record<string, unknown> {
  const released = releasedBy(scopes, "claims");
  const claims: Record<string, unknown> = {};
  for (const claim of SCOPE_CLAIMS) {
    if (!released.has(claim)) continue;
    const value = CLAIM_VALUES[claim](user);
    if (value !== "" && value !== undefined && value !== null) claims[claim] = value;
  }
  return claims;
}

/** The get-account fields the scopes release, through the one table. */
export function accountFieldsForScopes(scopes: readonly string[]): ReadonlySet<AccountField> {
  return releasedBy(scopes, "account") as ReadonlySet<AccountField>;
}

/** What the browser session sees at get-account: every field. */
export const ALL_ACCOUNT_FIELDS: ReadonlySet<AccountField> = new Set(ACCOUNT_FIELDS);
