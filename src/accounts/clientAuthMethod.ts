import { namesPrivateHost } from "../federation/urlRule.js";
import { TOKEN_ENDPOINT_AUTH_METHODS, type ApplicationRecord, type TokenEndpointAuthMethod } from "../shared/model.js";
import { FieldChecks, InvalidInputError } from "./validation.js";

/** RFC 7518 §3.2: an HS256 key must be at least 256 bits; a chosen secret used as one needs that many characters at least. */
export const MIN_HMAC_SECRET_LENGTH = 32;

const MAX_JWKS_CHARS = 65_536;
const MAX_JWKS_KEYS = 20;
/** Members of a private or symmetric JWK (RFC 7518 §6): never registered, as only public keys belong here. */
const PRIVATE_MEMBERS = ["d", "p", "q", "dp", "dq", "qi", "oth", "k"];

/** The writable fields this module decides. */
export interface AuthMethodInput {
  publicClient?: boolean;
  tokenEndpointAuthMethod?: TokenEndpointAuthMethod;
  /** A JWK Set as JSON text ("" clears it). */
  jwks?: string;
  /** "" clears it. */
  jwksUri?: string;
  clientSecret?: string;
}

/** tokenEndpointAuthMethod as input: one of the methods, or absent. */
export function optionalAuthMethod(raw: unknown): TokenEndpointAuthMethod | undefined {
  if (raw === undefined || raw === "") return undefined;
  if (typeof raw !== "string" || !(TOKEN_ENDPOINT_AUTH_METHODS as readonly string[]).includes(raw)) {
    throw new InvalidInputError("tokenEndpointAuthMethod", `is not one of ${TOKEN_ENDPOINT_AUTH_METHODS.join(", ")}`);
  }
  return raw as TokenEndpointAuthMethod;
}

/** A JWK Set of public keys (RFC 7517 §5), given as an object or its JSON text; returned as JSON text. */
export function optionalJwks(raw: unknown): string | undefined {
  if (raw === undefined || raw === "") return raw as undefined | "";
  let set: unknown = raw;
  if (typeof raw === "string") {
    if (raw.length > MAX_JWKS_CHARS) throw new InvalidInputError("jwks", `must be at most ${MAX_JWKS_CHARS} characters`);
    try {
      set = JSON.parse(raw);
    } catch {
      throw new InvalidInputError("jwks", "is not JSON");
    }
  }
  const keys = (set as { keys?: unknown } | null)?.keys;
  if (typeof set !== "object" || set === null || !Array.isArray(keys) || keys.length === 0 || keys.length > MAX_JWKS_KEYS) {
    throw new InvalidInputError("jwks", `must be a JWK Set: {"keys": [...]} with 1 to ${MAX_JWKS_KEYS} keys`);
  }
  for (const key of keys) {
    if (typeof key !== "object" || key === null || !["RSA", "EC", "OKP"].includes((key as { kty?: unknown }).kty as string)) {
      throw new InvalidInputError("jwks", "every key must be an object with kty RSA, EC or OKP");
    }
    if (PRIVATE_MEMBERS.some((m) => m in key)) throw new InvalidInputError("jwks", "must hold public keys only (no d, p, q, k ...)");
  }
  const text = JSON.stringify(set);
  if (text.length > MAX_JWKS_CHARS) throw new InvalidInputError("jwks", `must be at most ${MAX_JWKS_CHARS} characters`);
  return text;
}

/** jwksUri: https, and not a host that names this machine or a private network (it is fetched under the outbound rules). */
export function optionalJwksUri(raw: unknown): string | undefined {
  if (raw === undefined || raw === "") return raw as undefined | "";
  if (typeof raw !== "string" || raw.length > 2048) throw new InvalidInputError("jwksUri", "must be a URL of at most 2048 characters");
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new InvalidInputError("jwksUri", "is not an absolute URL");
  }
  if (url.protocol !== "https:") throw new InvalidInputError("jwksUri", "must use https");
  if (namesPrivateHost(url)) throw new InvalidInputError("jwksUri", "targets a loopback, private or link-local address");
  return raw;
}

/** How an application authenticates, after an input on top of what it was. */
export interface ResolvedAuthMethod {
  publicClient: boolean;
  tokenEndpointAuthMethod: TokenEndpointAuthMethod;
  jwks: string;
  jwksUri: string;
}

/**
 * The authentication fields of an application after `input` (on top of
 * `current` when updating). `none` and publicClient say the same thing, so
 * either sets the other; they must not disagree. private_key_jwt needs
 * exactly one of jwks and jwksUri, and no other method takes either.
 */
export function resolveAuthMethod(input: AuthMethodInput, current?: ApplicationRecord): ResolvedAuthMethod {
  const checks = new FieldChecks();
  const method =
    input.tokenEndpointAuthMethod ??
    (input.publicClient === true ? "none" : input.publicClient === false && current?.publicClient ? "client_secret_basic" : undefined) ??
    current?.tokenEndpointAuthMethod ??
    "client_secret_basic";
  const publicClient = input.publicClient ?? method === "none";
  if (publicClient !== (method === "none")) checks.refuse("tokenEndpointAuthMethod", "is none exactly when publicClient is true");
  const keepKeys = method === "private_key_jwt" && current?.tokenEndpointAuthMethod === "private_key_jwt";
  // A new jwks replaces a jwksUri and the other way round, unless both are sent.
  let jwks = input.jwks ?? (keepKeys && input.jwksUri === undefined ? current!.jwks : "");
  let jwksUri = input.jwksUri ?? (keepKeys && input.jwks === undefined ? current!.jwksUri : "");
  if (method === "private_key_jwt") {
    if (jwks && jwksUri) checks.refuse("jwks", "give jwks or jwksUri, not both");
    else if (!jwks && !jwksUri) checks.refuse("jwks", "private_key_jwt needs jwks (a JWK Set) or jwksUri");
  } else {
    if (input.jwks) checks.refuse("jwks", "is only for tokenEndpointAuthMethod private_key_jwt");
    if (input.jwksUri) checks.refuse("jwksUri", "is only for tokenEndpointAuthMethod private_key_jwt");
    jwks = "";
    jwksUri = "";
  }
  if (method === "client_secret_jwt" && input.clientSecret !== undefined && [...input.clientSecret].length < MIN_HMAC_SECRET_LENGTH) {
    checks.refuse("clientSecret", `must be at least ${MIN_HMAC_SECRET_LENGTH} characters with client_secret_jwt, whose HS256 key it is (leave it out to have one generated)`);
  }
  checks.done();
  return { publicClient, tokenEndpointAuthMethod: method, jwks, jwksUri };
}
