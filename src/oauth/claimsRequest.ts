import { OAuthError } from "./errors.js";
import { claimsForScopes, SUPPORTED_SCOPES, type ClaimSource } from "./scopes.js";

/** How one claim is asked for (OIDC Core §5.5.1): null, or these members. */
export interface ClaimRequest {
  essential?: boolean;
  value?: string | number | boolean;
  values?: (string | number | boolean)[];
}

/** Where a claims request asks for its claims. */
export type ClaimsTarget = "id_token" | "userinfo";

/**
 * The `claims` authorize parameter (OIDC Core §5.5), parsed: per target,
 * each asked claim's request. Kept with the pending authorization and the
 * code, so the token endpoint (id_token) and userinfo can honour it.
 */
export type ClaimsRequest = Partial<Record<ClaimsTarget, Record<string, ClaimRequest | null>>>;

/** The parameter travels in a URL and waits server-side: a bound keeps it small. */
export const MAX_CLAIMS_LENGTH = 4096;
const MAX_CLAIMS_PER_TARGET = 64;
const CLAIM_NAME = /^[A-Za-z0-9_.:$-]{1,128}$/;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const isScalar = (v: unknown): v is string | number | boolean => ["string", "number", "boolean"].includes(typeof v);

/**
 * Parse `claims`; undefined when absent. Invalid JSON, a non-object, or a
 * member of the wrong shape is invalid_request. Members other than
 * `id_token` and `userinfo`, and members of a claim request other than
 * essential, value and values, are ignored (§5.5: extensions).
 */
export function parseClaimsRequest(raw: string | undefined): ClaimsRequest | undefined {
  if (raw === undefined || raw === "") return undefined;
  if (raw.length > MAX_CLAIMS_LENGTH) throw invalid(`claims is longer than ${MAX_CLAIMS_LENGTH} characters`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw invalid("claims is not valid JSON");
  }
  if (!isObject(parsed)) throw invalid("claims must be a JSON object");
  const request: ClaimsRequest = {};
  for (const target of ["id_token", "userinfo"] as const) {
    const member = parsed[target];
    if (member === undefined || member === null) continue;
    if (!isObject(member)) throw invalid(`claims.${target} must be a JSON object`);
    const names = Object.keys(member);
    if (names.length > MAX_CLAIMS_PER_TARGET) throw invalid(`claims.${target} asks for more than ${MAX_CLAIMS_PER_TARGET} claims`);
    const asked: Record<string, ClaimRequest | null> = {};
    for (const name of names) {
      if (!CLAIM_NAME.test(name)) throw invalid(`claims.${target} has an invalid claim name`);
      asked[name] = parseClaim(member[name], `claims.${target}.${name}`);
    }
    request[target] = asked;
  }
  return request;
}

function parseClaim(value: unknown, where: string): ClaimRequest | null {
  if (value === null) return null;
  if (!isObject(value)) throw invalid(`${where} must be null or a JSON object`);
  const claim: ClaimRequest = {};
  if (value.essential !== undefined) {
    if (typeof value.essential !== "boolean") throw invalid(`${where}.essential must be true or false`);
    claim.essential = value.essential;
  }
  if (value.value !== undefined) {
    if (!isScalar(value.value)) throw invalid(`${where}.value must be a string, number or boolean`);
    claim.value = value.value;
  }
  if (value.values !== undefined) {
    if (!Array.isArray(value.values) || !value.values.every(isScalar)) throw invalid(`${where}.values must be an array of strings, numbers or booleans`);
    claim.values = value.values;
  }
  return claim;
}

const invalid = (description: string) => new OAuthError("invalid_request", description);

/** The claim names asked for at `target`. */
export function requestedClaimNames(request: ClaimsRequest | undefined, target: ClaimsTarget): string[] {
  return Object.keys(request?.[target] ?? {});
}

/**
 * The standard claims (the scope table's) about the user that the request
 * asks for at `target`, whatever the scope: those the user has a value for.
 * A claim the scope table does not know is left out (§5.5: an OP need not
 * return a claim it does not have, even an essential one).
 */
export function requestedClaims(user: ClaimSource, request: ClaimsRequest | undefined, target: ClaimsTarget): Record<string, unknown> {
  const names = requestedClaimNames(request, target);
  if (names.length === 0) return {};
  const all = claimsForScopes(user, SUPPORTED_SCOPES);
  const picked: Record<string, unknown> = {};
  for (const name of names) if (Object.hasOwn(all, name)) picked[name] = all[name];
  return picked;
}

/** The request as stored with a code; null when there is none. */
export function storedClaimsRequest(request: ClaimsRequest | undefined): string | null {
  return request && Object.keys(request).length > 0 ? JSON.stringify(request) : null;
}

/** Back from storage (written by storedClaimsRequest, so trusted). */
export function loadClaimsRequest(stored: string | null | undefined): ClaimsRequest | undefined {
  return stored ? (JSON.parse(stored) as ClaimsRequest) : undefined;
}

/**
 * The claim names asked at `target`, as a refresh token row keeps them (a
 * JSON list; store/tokens.ts): the names are all that requestedClaims reads.
 * Undefined when none are asked.
 */
export function storedClaimNames(request: ClaimsRequest | undefined, target: ClaimsTarget): string | undefined {
  const names = requestedClaimNames(request, target);
  return names.length > 0 ? JSON.stringify(names) : undefined;
}

/** Back from a refresh token row: a request asking `target` for those names, each as null (§5.5.1's "default manner"). */
export function claimsRequestOfNames(target: ClaimsTarget, stored: string | undefined): ClaimsRequest | undefined {
  const names: unknown = stored ? JSON.parse(stored) : undefined;
  if (!Array.isArray(names) || names.length === 0) return undefined;
  return { [target]: Object.fromEntries(names.filter((n): n is string => typeof n === "string").map((name) => [name, null])) };
}
